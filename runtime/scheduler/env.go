package scheduler

import (
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
)

// scrubEnv returns base without the variables that would change what the
// Slurm commands do (contract §8), plus LC_ALL=C. Order is kept.
func scrubEnv(base []string) []string {
	return slurmenv.Scrub(base)
}

// queryEnv is scrubEnv plus SLURM_TIME_FORMAT=standard, so that sacct's
// Submit column is always ISO 8601 whatever the caller's environment says.
func queryEnv(base []string) []string {
	out := scrubEnv(base)
	kept := out[:0]
	for _, kv := range out {
		if !strings.HasPrefix(kv, "SLURM_TIME_FORMAT=") {
			kept = append(kept, kv)
		}
	}
	return append(kept, "SLURM_TIME_FORMAT=standard")
}
