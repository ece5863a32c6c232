package schema

import (
	"path/filepath"
	"strings"
)

// IsSchemaProblem says whether p is about a key or a value that a JSON
// Schema of this package describes (an unknown key, a wrong type or value,
// a rule between values), as opposed to a problem of the file itself (it is
// missing, unreadable, too large, not YAML, not a mapping), of its YAML
// structure (aliases, merge keys, duplicate keys, tags) or of a kit's layout.
// `flare-slurm schema NAME` helps with the former only.
func IsSchemaProblem(p Problem) bool {
	if p.Path == "" {
		return false // about the whole file or a kit entry
	}
	for _, m := range []string{msgAlias, msgKeyNotString, msgMergeKey, msgDuplicate, msgTag} {
		if strings.HasPrefix(p.Message, m) {
			return false
		}
	}
	return true
}

// IsReadProblem says whether p says a file or kit could not be found or
// read at all.
func IsReadProblem(p Problem) bool {
	return strings.HasPrefix(p.Message, "cannot read file: ") || strings.HasPrefix(p.Message, "cannot read startup kit: ")
}

// IsSyntaxProblem says whether p is a YAML (or JSON) syntax error.
func IsSyntaxProblem(p Problem) bool {
	return strings.HasPrefix(p.Message, msgNotYAML)
}

// SchemaOf names the JSON Schema that describes file, validated as an input
// of kind: the kind itself, or for a kit the kind of the kit file
// (config.yaml → slurm-config, local/study_runtime.yaml → study-runtime);
// "" when no schema describes it.
func SchemaOf(kind, file string) string {
	switch kind {
	case KindSlurmConfig, KindStudyRuntime, KindJobMeta:
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
