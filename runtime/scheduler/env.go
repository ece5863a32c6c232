package scheduler

import (
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
)

// queryEnv is slurmenv.Scrub (contract §8) plus SLURM_TIME_FORMAT=standard, so that sacct's
// Submit column is always ISO 8601 whatever the caller's environment says.
func queryEnv(base []string) []string {
	out := slurmenv.Scrub(base)
	kept := out[:0]
	for _, kv := range out {
		if !strings.HasPrefix(kv, "SLURM_TIME_FORMAT=") {
			kept = append(kept, kv)
		}
	}
	return append(kept, "SLURM_TIME_FORMAT=standard")
}
