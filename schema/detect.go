package schema

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
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
		return "", Problems{{Kind: problem.Read, File: path, Message: "cannot read file: " + fsx.Pathless(err).Error()}}
	}
	if st.IsDir() {
		return KindKit, nil
	}
	if k := kindByName(path); k != "" {
		return k, nil
	}
	data, _, probs := ReadInput(path, false)
	if probs != nil {
		return "", probs
	}
	return DetectKindData(path, data, true)
}

// DetectKindData is DetectKind for content data the caller has already
// read (once, as it will use it). From a file (fromFile), the name decides,
// then the content. Content that has no file name (standard input, shown as
// name) is decided by its top-level keys, and content that is not a YAML
// mapping comes back with its problems.
func DetectKindData(name string, data []byte, fromFile bool) (string, Problems) {
	if !fromFile {
		return detectData(name, "", true, data)
	}
	if k := kindByName(name); k != "" {
		return k, nil
	}
	ext := strings.ToLower(filepath.Ext(name))
	inputName := ext == ".yaml" || ext == ".yml" || ext == ".json"
	return detectData(name, ext, inputName, data)
}

// kindByName is the kind a file's name alone tells, or "".
func kindByName(path string) string {
	switch filepath.Base(path) {
	case StudyRuntimeFile:
		return KindStudyRuntime
	case "meta.json", "meta.yaml", "meta.yml":
		return kindJobMeta
	case "slurm.yaml", "slurm.yml", "config.yaml":
		return KindSlurmConfig
	}
	return ""
}

// IsKitPath says whether DetectKind takes path for a startup kit: a
// directory.
func IsKitPath(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// detectData decides the kind of data read from path by its top-level keys.
func detectData(path, ext string, inputName bool, data []byte) (string, Problems) {
	top, ok := jsonTopLevelKeys(data)
	if !ok {
		t := parseTree(path, data)
		switch {
		case t.root != nil:
		case !inputName:
			return "", nil
		case ext == ".json":
			return kindJobMeta, nil
		default:
			return "", t.result()
		}
		top = map[string]bool{}
		for _, p := range pairs(t.root) {
			top[p.name] = true
		}
	}
	switch {
	case top["runtime"] || top["job_launcher"]:
		return KindSlurmConfig, nil
	case top["format_version"] || top["studies"]:
		return KindStudyRuntime, nil
	case top["resource_spec"] || top["launcher_spec"], ext == ".json":
		return kindJobMeta, nil
	}
	return "", nil
}

// jsonTopLevelKeys is the set of top-level keys of data when it is a valid
// JSON object, read without building a tree of it (a job meta of megabytes
// would cost hundreds of megabytes as a YAML tree, only for its first
// keys). ok is false for anything else (YAML, a byte order mark, invalid
// JSON), which the YAML reader decides as before.
func jsonTopLevelKeys(data []byte) (top map[string]bool, ok bool) {
	start := ojson.SkipSpace(data, 0)
	if start >= len(data) || data[start] != '{' || !json.Valid(data) {
		return nil, false
	}
	top = map[string]bool{}
	ojson.Each(data, start, func(s ojson.Span) bool {
		top[ojson.KeyText(data, s.KeyOffset)] = true
		return true
	})
	return top, true
}

// Kinds lists what `validate --kind` accepts.
func Kinds() []string {
	return []string{KindSlurmConfig, KindStudyRuntime, kindJobMeta, KindKit}
}

// ValidateOptions tune ValidateData.
type ValidateOptions struct {
	// Site selects the site of a job meta ("" checks every site it names).
	Site string
	// Offline skips every check that needs this host (today: that a
	// container image file exists, the site's and each study's); each
	// skipped check is returned.
	Offline bool
	// ExcludeSecrets accepts a kit without its private key (a CI
	// repository holds none); the skipped check is returned.
	ExcludeSecrets bool
}

// kitOptions are the kit checks these options ask for.
func (o ValidateOptions) kitOptions() kitOptions {
	return kitOptions{host: o.hostChecks(), keyOptional: o.ExcludeSecrets}
}

// hostChecks is the study runtime's host checks these options ask for.
func (o ValidateOptions) hostChecks() hostChecks {
	if o.Offline {
		return hostChecksOffline
	}
	return hostChecksOn
}

// ValidateData validates name as an input of kind: data, content read
// from somewhere that is not a file (standard input) shown as name in
// every problem, or the file at name when data is nil. It returns the
// problems (nil when valid) and, offline, the host checks it skipped, each
// at the value it would have checked. A kit is a directory, so it cannot
// be given as data.
func ValidateData(kind, name string, data []byte, o ValidateOptions) (probs, skipped Problems) {
	switch kind {
	case KindSlurmConfig:
		_, probs, skipped = loadConfig(name, data, o.Offline)
	case KindStudyRuntime:
		probs, skipped = validateStudyRuntime(name, data, o.hostChecks())
	case kindJobMeta:
		if data == nil {
			if data, _, probs = ReadInput(name, false); probs != nil {
				return probs, nil
			}
		}
		_, probs = ParseJobMeta(name, data, o.Site)
	case KindKit:
		if data != nil {
			return Problems{{Kind: problem.Layout, File: name, Message: "a startup kit is a directory: it cannot be read from standard input",
				Hint: "give the kit's path"}}, nil
		}
		kit, kp, sk := loadKit(name, o.kitOptions())
		probs, skipped = append(probs, kp...), sk
		// A workspace prepared with --launcher flare-slurm names the binary its parent runs.
		probs = append(probs, kitBridgeProblems(name)...)
		// KIT/config.yaml is prepare's default config: check it whatever
		// the rest of the kit holds, and its fit with the kit when the
		// kit's role is known.
		// A slurm.yaml (or slurm.yml) beside it is a config too, one that
		// a user meant for this kit: it is checked the same way.
		for _, cfgPath := range KitConfigs(name) {
			if kit == nil {
				break
			}
			cfg, p, sk := LoadSlurmConfig(cfgPath, o.Offline)
			probs, skipped = append(probs, p...), append(skipped, sk...)
			if kit.Role != "" {
				probs = append(probs, CheckConfigForKit(cfg, kit)...)
			}
		}
		probs.Sort()
	default:
		return Problems{{Kind: problem.Rule, File: name, Message: "unknown kind " + kind}}, nil
	}
	return probs, skipped
}

// loadConfig reads the Slurm config name from data, or from the file at
// name when data is nil.
func loadConfig(name string, data []byte, offline bool) (*SlurmConfig, Problems, Problems) {
	if data == nil {
		return LoadSlurmConfig(name, offline)
	}
	return parseSlurmConfig(name, data, offline)
}

// ReadingWarningsData is ReadingWarnings for content data that is not a
// file, shown as name; nil data is the file (or kit) at name.
func ReadingWarningsData(kind, name string, data []byte) Problems {
	switch {
	case data == nil:
		return ReadingWarnings(kind, name)
	case kind != KindSlurmConfig && kind != KindStudyRuntime:
		return nil
	}
	return ReadingDifferences(name, data, isStudyEnvValue)
}

// ReadStdin reads standard input as an input file named name, with the
// size limit of every input.
func ReadStdin(name string, r io.Reader) ([]byte, Problems) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return nil, Problems{{Kind: problem.Read, File: name, Message: "cannot read standard input: " + fsx.Pathless(err).Error()}}
	}
	if len(data) > MaxInputBytes {
		return nil, Problems{{Kind: problem.Layout, File: name, Message: fmt.Sprintf("input is too large (more than %d bytes)", MaxInputBytes),
			Hint: "inputs are small hand-written files: is this the right input?"}}
	}
	return data, nil
}

// ValidatePair checks a Slurm config (read from cfgName, or data when it
// is not nil) as ValidateData does, plus its fit with the startup kit at
// kitDir as prepare checks it (a parent block on a server kit).
// KIT/config.yaml is not read: the config given replaces it, as prepare
// --config does. With ownKit, every problem of the kit is returned too,
// its local/study_runtime.yaml validated with it (validate --kit); else
// validate checks a kit given beside its config as its own PATH, once.
func ValidatePair(kitDir, cfgName string, data []byte, o ValidateOptions, ownKit bool) (probs, skipped Problems) {
	ko := kitOptions{keyOptional: true}
	if ownKit {
		ko = o.kitOptions()
	}
	kit, kp, kitSkipped := loadKit(kitDir, ko)
	cfg, probs, skipped := loadConfig(cfgName, data, o.Offline)
	if ownKit {
		probs, skipped = append(kp, probs...), append(skipped, kitSkipped...)
	}
	if kit != nil && kit.Role != "" {
		probs = append(probs, CheckConfigForKit(cfg, kit)...)
	}
	probs.Sort()
	return probs, skipped
}

// ValidatePairKit is the kit half of ValidatePair with ownKit: the kit at
// kitDir checked as prepare reads it. validate --kit reports it for a
// config it cannot check (unreadable, of another kind), so that a bad
// config does not hide the kit's own problems.
func ValidatePairKit(kitDir string, o ValidateOptions) (probs, skipped Problems) {
	_, probs, skipped = loadKit(kitDir, o.kitOptions()) // sorted
	return probs, skipped
}

// KitConfigs are the Slurm configs a kit directory holds at its top:
// config.yaml (prepare's default config), then slurm.yaml and slurm.yml.
func KitConfigs(kitDir string) []string {
	var out []string
	for _, name := range []string{"config.yaml", "slurm.yaml", "slurm.yml"} {
		p := filepath.Join(kitDir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// KitNotes are warnings about a kit that are not problems: a slurm.yaml in
// the kit is checked with it, but prepare does not read it unless it is
// given with --config.
func KitNotes(kitDir string) Problems {
	var out Problems
	for _, p := range KitConfigs(kitDir) {
		if filepath.Base(p) != "config.yaml" {
			out = append(out, Problem{Kind: problem.Layout, File: p, Code: warnKitConfigName,
				Message: "is checked with the kit, but prepare reads KIT/config.yaml by default, not " + filepath.Base(p),
				Hint:    "run 'flare-slurm prepare KIT --config " + p + "', or rename it to config.yaml"})
		}
	}
	return out
}
