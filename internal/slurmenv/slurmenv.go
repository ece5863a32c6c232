// Package slurmenv holds the one rule for the environment the Slurm
// commands (sbatch, squeue, sacct, scancel) run with (contract §8).
package slurmenv

import (
	"slices"
	"strings"
)

// dropped are the exact names that would change what the Slurm commands do.
var dropped = []string{"SLURM_CLUSTERS", "SLURM_EXPORT_ENV", "SLURM_HINT",
	"SLURM_MEM_PER_CPU", "SLURM_MEM_PER_GPU", "SLURM_MEM_PER_NODE", "LC_ALL"}

// droppedPrefixes are the prefixes of the commands' input variables.
var droppedPrefixes = []string{"SBATCH_", "SQUEUE_", "SACCT_", "SCANCEL_"}

// Scrub returns base ("NAME=value" entries) without the variables that
// would change what the Slurm commands do and without the names in extra
// (for example the variables that hold secrets), keeping the order of the
// rest, with LC_ALL=C appended.
func Scrub(base []string, extra ...string) []string {
	out := make([]string, 0, len(base)+1)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(dropped, name) || slices.Contains(extra, name) || hasDroppedPrefix(name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}

func hasDroppedPrefix(name string) bool {
	for _, p := range droppedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
