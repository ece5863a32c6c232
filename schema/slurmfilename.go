package schema

import "strings"

// SlurmFilename is path as a literal part of a Slurm filename pattern
// (sbatch --output, --error, --input): Slurm replaces %j, %u, %x, ... there,
// so every '%' of the path is doubled and the path reaches the file system
// unchanged. The caller appends its own pattern (slurm-%j.out) after it.
func SlurmFilename(path string) string {
	return strings.ReplaceAll(path, "%", "%%")
}

// CheckWorkspacePath says what is wrong with a workspace path ("" when
// nothing): ':' and ',' separate Slurm and container bind lists, and a
// '\' makes Slurm strip backslashes and turn off every % expansion in a
// filename pattern (sbatch --output), so the job's output would land
// elsewhere. The path reaches every batch script and sbatch argv, so the
// text rule of one-line values (CheckText) applies too.
func CheckWorkspacePath(path string) string {
	if strings.ContainsAny(path, `:,\`) {
		return `must not contain ':', ',' or '\' (Slurm and container bind lists use ':' and ','; Slurm's filename patterns treat '\' as an escape)`
	}
	return CheckText(path, false)
}
