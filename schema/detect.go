package schema

import (
	"os"
	"path/filepath"
	"strings"
)

// DetectKind guesses which kind of input path is: a directory is a kit;
// otherwise the file name (study_runtime.yaml; meta.json; slurm.yaml or
// config.yaml, prepare's default config) or its top-level keys decide:
// runtime/job_launcher → slurm-config, format_version/studies →
// study-runtime, resource_spec/launcher_spec → job-meta; any other .json
// file → job-meta.
//
// It returns "" when it cannot tell. A file with a .yaml, .yml or .json
// name that is not a readable YAML mapping comes back with those problems
// (it is an input, just a broken one); any other file that is not a YAML
// mapping (a README.md, a script) is one whose kind cannot be told: ""
// and no problems.
func DetectKind(path string) (string, Problems) {
	st, err := os.Stat(path)
	if err != nil {
		return "", Problems{{File: path, Message: "cannot read file: " + errText(err)}}
	}
	if st.IsDir() {
		return KindKit, nil
	}
	switch filepath.Base(path) {
	case StudyRuntimeFile:
		return KindStudyRuntime, nil
	case "meta.json", "meta.yaml", "meta.yml":
		return KindJobMeta, nil
	case "slurm.yaml", "slurm.yml", "config.yaml":
		return KindSlurmConfig, nil
	}
	ext := strings.ToLower(filepath.Ext(path))
	inputName := ext == ".yaml" || ext == ".yml" || ext == ".json"
	data, probs := readInput(path)
	if probs != nil {
		return "", probs
	}
	t := parseTree(path, data)
	if t.root == nil {
		if !inputName {
			return "", nil
		}
		if ext == ".json" {
			return KindJobMeta, nil
		}
		return "", t.result()
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if get(t.root, k) != nil || getKey(t.root, k) != nil {
				return true
			}
		}
		return false
	}
	switch {
	case has("runtime", "job_launcher"):
		return KindSlurmConfig, nil
	case has("format_version", "studies"):
		return KindStudyRuntime, nil
	case has("resource_spec", "launcher_spec"), ext == ".json":
		return KindJobMeta, nil
	}
	return "", nil
}

// Kinds lists what `validate --kind` accepts.
func Kinds() []string {
	return []string{KindSlurmConfig, KindStudyRuntime, KindJobMeta, KindKit}
}

// Validate checks one input of the given kind and returns its problems
// (nil when valid). site selects the site of a job meta ("" checks every
// site the file names). A kit's config.yaml (prepare's default config), if
// present, is validated with the kit.
func Validate(kind, path, site string) Problems {
	probs, _ := ValidateWith(kind, path, ValidateOptions{Site: site})
	return probs
}

// ValidateOptions tune ValidateWith.
type ValidateOptions struct {
	// Site selects the site of a job meta ("" checks every site it names).
	Site string
	// Offline skips every check that needs this host (today: that a
	// container image file exists); each skipped check is returned.
	Offline bool
}

// ValidateWith is Validate with options. It returns the problems (nil when
// valid) and, offline, the host checks it skipped, each at the value it
// would have checked.
func ValidateWith(kind, path string, o ValidateOptions) (probs, skipped Problems) {
	site := o.Site
	switch kind {
	case KindSlurmConfig:
		_, probs, skipped = loadSlurmConfig(path, o.Offline)
	case KindStudyRuntime:
		_, probs = LoadStudyRuntime(path)
	case KindJobMeta:
		data, p := readInput(path)
		if p != nil {
			return p, nil
		}
		_, probs = ParseJobMeta(path, data, site)
	case KindKit:
		kit, kp := loadKit(path)
		probs = append(probs, kp...)
		// KIT/config.yaml is prepare's default config: check it whatever
		// the rest of the kit holds, and its fit with the kit when the
		// kit's role is known.
		cfgPath := filepath.Join(path, "config.yaml")
		if kit != nil && isFile(cfgPath) {
			cfg, p, sk := loadSlurmConfig(cfgPath, o.Offline)
			probs, skipped = append(probs, p...), sk
			if kit.Role != "" {
				probs = append(probs, CheckConfigForKit(cfg, kit)...)
			}
		}
		probs.Sort()
	default:
		return Problems{{File: path, Message: "unknown kind " + kind}}, nil
	}
	return probs, skipped
}
