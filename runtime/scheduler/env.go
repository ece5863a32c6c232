package scheduler

import (
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
)

// ScrubEnv returns base without the variables that would change what the
// Slurm commands do (contract §8), plus LC_ALL=C. Order is kept.
func ScrubEnv(base []string) []string {
	return slurmenv.Scrub(base)
}

// QueryEnv is ScrubEnv plus SLURM_TIME_FORMAT=standard, so that sacct's
// Submit column is always ISO 8601 whatever the caller's environment says.
func QueryEnv(base []string) []string {
	out := ScrubEnv(base)
	kept := out[:0]
	for _, kv := range out {
		if !strings.HasPrefix(kv, "SLURM_TIME_FORMAT=") {
			kept = append(kept, kv)
		}
	}
	return append(kept, "SLURM_TIME_FORMAT=standard")
}
