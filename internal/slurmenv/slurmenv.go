// Package slurmenv holds the one rule for the environment the Slurm
// commands (sbatch, squeue, sacct, scancel) run with (contract §8).
//
// A parent may itself run inside a Slurm allocation (startup/parent.slurm,
// or a parent started under srun): its environment then holds the
// allocation's SLURM_* variables, and every input variable of the Slurm
// commands it set. Two things follow, and the rule covers both:
//
//   - the commands read input variables (SBATCH_PARTITION, SQUEUE_FORMAT,
//     SLURM_JSON, SLURM_TIME_FORMAT, …) that would change what they do or
//     print;
//   - sbatch propagates every SLURM_* variable of its environment into the
//     job even with --export=NIL ("SLURM_* variables are always
//     propagated", sbatch(1)), where the job's own srun reads them as input:
//     the parent's SLURM_GPUS_PER_NODE becomes the node group's
//     --gpus-per-node (NVFlare issue 5268).
//
// So every variable of the Slurm commands' families is dropped: SLURM_*,
// SLURMD_*, SBATCH_*, SRUN_*, SALLOC_*, SQUEUE_*, SACCT_*, SCANCEL_*, and
// srun's PMI_FANOUT, PMI_FANOUT_OFF_HOST and PMI_TIME, except SLURM_CONF
// (where the cluster's configuration is: the parent's commands must reach
// the cluster it is configured for). The test reads the input variables
// that sbatch, srun, squeue, sacct and scancel document in their man pages
// (Slurm 24.11 and 26.05) and checks that each is dropped or kept here.
package slurmenv

import (
	"slices"
	"strings"
)

// kept are the Slurm variables passed on although they are the commands'
// input: the location of the cluster's configuration.
var kept = []string{"SLURM_CONF"}

// droppedPrefixes are the families of the Slurm commands' variables.
var droppedPrefixes = []string{"SLURM_", "SLURMD_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SACCT_", "SCANCEL_"}

// dropped are the exact names outside those families that a Slurm command
// reads (srun's PMI tuning), and LC_ALL, which Scrub sets itself.
var dropped = []string{"PMI_FANOUT", "PMI_FANOUT_OFF_HOST", "PMI_TIME", "LC_ALL"}

// isDropped says whether Scrub drops the variable name.
func isDropped(name string) bool {
	return !slices.Contains(kept, name) && (slices.Contains(dropped, name) ||
		slices.ContainsFunc(droppedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }))
}

// Scrub returns base ("NAME=value" entries) without the variables that
// would change what the Slurm commands do or reach the job's own srun
// (isDropped) and without the names in extra (for example the variables
// that hold secrets), keeping the order of the rest, with LC_ALL=C
// appended.
func Scrub(base []string, extra ...string) []string {
	out := make([]string, 0, len(base)+1)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if isDropped(name) || slices.Contains(extra, name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}
