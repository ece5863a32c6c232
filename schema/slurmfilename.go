package schema

import "strings"

// SlurmFilename is path as a literal part of a Slurm filename pattern
// (sbatch --output, --error, --input): Slurm replaces %j, %u, %x, ... there,
// so every '%' of the path is doubled and the path reaches the file system
// unchanged. The caller appends its own pattern (slurm-%j.out) after it.
func SlurmFilename(path string) string {
	return strings.ReplaceAll(path, "%", "%%")
}
