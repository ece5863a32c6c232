package scheduler

import "strings"

// ScrubEnv returns base without the variables that would change what the
// Slurm commands do (contract §8), plus LC_ALL=C. Order is kept.
func ScrubEnv(base []string) []string {
	out := make([]string, 0, len(base)+1)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if dropped(name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
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

func dropped(name string) bool {
	for _, p := range []string{"SBATCH_", "SQUEUE_", "SACCT_", "SCANCEL_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "SLURM_CLUSTERS", "SLURM_EXPORT_ENV", "SLURM_HINT", "SLURM_MEM_PER_CPU",
		"SLURM_MEM_PER_GPU", "SLURM_MEM_PER_NODE", "LC_ALL":
		return true
	}
	return false
}
