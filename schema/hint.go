package schema

import "path/filepath"

// SchemaOf names the JSON Schema that describes file, validated as an input
// of kind: the kind itself, or for a kit the kind of the kit file
// (config.yaml → slurm-config, local/study_runtime.yaml → study-runtime);
// "" when no schema describes it.
func SchemaOf(kind, file string) string {
	switch kind {
	case KindSlurmConfig, KindStudyRuntime, kindJobMeta:
		return kind
	case KindKit:
		switch filepath.Base(file) {
		case "config.yaml":
			return KindSlurmConfig
		case StudyRuntimeFile:
			return KindStudyRuntime
		}
	}
	return ""
}
