package scheduler

import (
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
)

// queryEnv is slurmenv.Scrub (contract §8) plus SLURM_TIME_FORMAT=standard, so that sacct's
// Submit column is always ISO 8601 whatever the caller's environment says.
func queryEnv(base []string) []string {
	kept := slices.DeleteFunc(slurmenv.Scrub(base), func(kv string) bool { return strings.HasPrefix(kv, "SLURM_TIME_FORMAT=") })
	return append(kept, "SLURM_TIME_FORMAT=standard")
}
