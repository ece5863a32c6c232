package schema

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"
	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema/kind"
	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// File names of a kit's study runtime (v2) and of its legacy v1 format.
const (
	StudyRuntimeFile = "study_runtime.yaml"
	legacyStudyFile  = "study_data.yaml"
)

// hostChecks says whether a study runtime is checked against this host:
// that each study's container image is an existing regular file, as render
// and launch require. validate runs them (or lists them as skipped with
// --offline); the compiler checks the image itself at every launch, and
// prepare does not look at study images (the file is re-read at launch).
type hostChecks int

const (
	noHostChecks      hostChecks = iota // the compiler, prepare
	hostChecksOn                        // validate
	hostChecksOffline                   // validate --offline: each one skipped
)

// validateStudyRuntime is loadStudyRuntime (or, for data that is not nil,
// parseStudyRuntime) with validate's host checks; it returns the problems
// and the checks it skipped.
func validateStudyRuntime(path string, data []byte, host hostChecks) (probs, skipped Problems) {
	parse := func(file string, d []byte) (sr *StudyRuntime, probs Problems) {
		sr, probs, skipped = parseStudyRuntimeHost(file, d, host)
		return sr, probs
	}
	if data != nil {
		_, probs = parse(path, data)
	} else {
		_, probs = loadStudyRuntime(path, parse)
	}
	return probs, skipped
}

// loadStudyRuntime reads and validates a local/study_runtime.yaml with
// parse (parseStudyRuntime, or one that skips an unchanged file's parse).
// A legacy study_data.yaml beside it is a problem too: the two cannot be
// combined.
func loadStudyRuntime(path string, parse func(string, []byte) (*StudyRuntime, Problems)) (*StudyRuntime, Problems) {
	var legacy Problems
	if filepath.Base(path) == StudyRuntimeFile {
		legacyPath := filepath.Join(filepath.Dir(path), legacyStudyFile)
		if _, err := os.Lstat(legacyPath); err == nil {
			legacy = Problems{{
				Kind:    problem.Layout,
				File:    legacyPath,
				Message: "legacy study_data.yaml cannot be combined with study_runtime.yaml",
				Hint:    "move its studies into study_runtime.yaml (format_version: 2) and delete study_data.yaml",
			}}
		}
	}
	data, _, probs := ReadInput(path, false)
	if probs != nil {
		return nil, append(legacy, probs...)
	}
	if legacy != nil {
		_, probs = parseStudyRuntime(path, data)
		probs = append(legacy, probs...)
		probs.Sort()
		return nil, probs
	}
	return parse(path, data)
}

// parseStudyRuntime validates study_runtime.yaml content read from file.
func parseStudyRuntime(file string, data []byte) (*StudyRuntime, Problems) {
	sr, probs, _ := parseStudyRuntimeHost(file, data, noHostChecks)
	return sr, probs
}

// parseStudyRuntimeHost is parseStudyRuntime with host checks; it also returns
// the host checks it skipped (hostChecksOffline).
func parseStudyRuntimeHost(file string, data []byte, host hostChecks) (*StudyRuntime, Problems, Problems) {
	t := parseTree(file, data)
	t.studyHost = host
	if t.root == nil {
		return nil, t.result(), nil
	}
	t.validateSchema(KindStudyRuntime, studyKeyHook, studyValueHook)
	studies := get(t.root, "studies")
	for _, s := range pairs(studies) {
		if !t.checkName(s.key, "studies."+s.name, s.name) {
			continue
		}
		if s.val.Kind == yaml.MappingNode {
			t.checkStudy(s.name, s.val)
		}
	}
	if probs := t.result(); probs != nil {
		return nil, probs, t.skipped
	}
	sr := &StudyRuntime{File: file, root: t.root}
	for _, s := range pairs(studies) {
		sr.Studies = append(sr.Studies, decodeStudy(s.name, s.val))
	}
	return sr, nil, t.skipped
}

var studyNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$`)
})

// studyKeyHook explains keys that belong to other launchers.
func studyKeyHook(parent, key string, allowed []string) (string, string, bool) {
	parts := strings.Split(parent, ".")
	switch {
	case len(parts) == 2 && parts[0] == "studies" && key == "pod_template":
		return "pod_template belongs to the Kubernetes launcher and is not supported under Slurm", "remove it", true
	case len(parts) == 2 && parts[0] == "studies" && key == "docker_kwargs":
		return "docker_kwargs belongs to the Docker launcher and is not supported under Slurm", "remove it", true
	case len(parts) == 4 && parts[0] == "studies" && parts[2] == "secret_mounts" && key == "items":
		return "items is Kubernetes-only and is not supported under Slurm",
			"point source at a directory containing only the intended files", true
	case len(parts) == 3 && parts[0] == "studies" && parts[2] == "slurm":
		return "unknown key (allowed: " + strings.Join(allowed, ", ") + ")", didYouMean(key, allowed), true
	}
	return "", "", false
}

// studyValueHook explains the reserved dataset type.
func studyValueHook(p string, k jsonschema.ErrorKind) (string, string, bool) {
	e, ok := k.(*kind.Enum)
	if !ok {
		return "", "", false
	}
	switch {
	case strings.HasSuffix(p, ".type") && strings.Contains(p, ".datasets.") && e.Got == "databricks":
		return "dataset type databricks is not yet supported (allowed: mount)", "", true
	case strings.HasSuffix(p, ".mode") && strings.Contains(p, ".secret_mounts."):
		return fmt.Sprintf("must be ro: secret mounts are always read-only (got %s)", gotValue(e.Got)), "", true
	}
	return "", "", false
}

// nameMessage explains the study, dataset and secret mount name rule.
const nameMessage = "is not a valid name: use 1-63 lowercase letters, digits, '_' or '-', starting and ending with a letter or digit"

// checkName reports a study, dataset or secret mount name that breaks the
// name rule; it says whether the name is valid.
func (t *tree) checkName(n *yaml.Node, path, name string) bool {
	if studyNameRE().MatchString(name) {
		return true
	}
	t.add(problem.Schema, n, path, fmt.Sprintf("%s (got %q)", nameMessage, name), "")
	return false
}

// checkStudy runs the rules of one study that JSON Schema cannot express.
func (t *tree) checkStudy(name string, s *yaml.Node) {
	base := "studies." + name
	for _, key := range []string{"datasets", "secret_mounts"} {
		for _, p := range pairs(get(s, key)) {
			t.checkName(p.key, base+"."+key+"."+p.name, p.name)
		}
	}
	envNames := map[string]bool{}
	for _, p := range pairs(get(s, "env")) {
		t.checkEnvName(p.key, joinPath(base+".env", p.name), p.name)
		envNames[p.name] = true
	}
	for _, p := range pairs(get(s, "secret_env")) {
		path := joinPath(base+".secret_env", p.name)
		t.checkEnvName(p.key, path, p.name)
		if envNames[p.name] {
			t.add(problem.Rule, p.key, path, fmt.Sprintf("%s is defined in both env and secret_env", p.name), "keep it in one of them")
		}
		if src := get(p.val, "source"); isString(src) && IsValidEnvName(src.Value) && IsLauncherOwnedEnvName(src.Value) {
			t.add(problem.Schema, src, path+".source", fmt.Sprintf("%s is launcher-owned and cannot be a secret source", src.Value), launcherOwnedHint)
		}
	}
	t.checkStudyImage(base, s)
	sl := get(s, "slurm")
	for _, key := range []string{"partition", "account", "qos"} {
		t.checkNoSpace(get(sl, key), base+".slurm."+key)
	}
	if sb := get(sl, "sandbox"); isString(sb) && sb.Value == SandboxNone {
		for _, key := range []string{"container", "datasets", "secret_mounts"} {
			if k := getKey(s, key); k != nil {
				t.add(problem.Rule, k, base+"."+key, "is not allowed when the study's slurm.sandbox is none",
					"remove "+key+", or use sandbox apptainer or pyxis")
			}
		}
	}
	// Mount destinations: datasets at /data/<study>/<name>, then secret
	// mounts; none may overlap another of the same study.
	type dest struct{ path, what string }
	var dests []dest
	for _, p := range pairs(get(s, "datasets")) {
		dests = append(dests, dest{"/data/" + name + "/" + p.name, "dataset " + p.name})
	}
	for _, p := range pairs(get(s, "secret_mounts")) {
		mp := get(p.val, "mount_path")
		if !isString(mp) || !strings.HasPrefix(mp.Value, "/") || strings.ContainsAny(mp.Value, ":,\n\r\x00") {
			continue // the schema reports it
		}
		mpPath := joinPath(base+".secret_mounts", p.name) + ".mount_path"
		if msg := checkMountDestination(mp.Value); msg != "" {
			t.add(problem.Schema, mp, mpPath, msg, "")
			continue
		}
		clean := path.Clean(mp.Value)
		for _, d := range dests {
			if pathsOverlap(clean, d.path) {
				t.add(problem.Rule, mp, mpPath, fmt.Sprintf("%s overlaps the mount of %s at %s", mp.Value, d.what, d.path), "choose a destination outside it")
				break
			}
		}
		dests = append(dests, dest{clean, "secret mount " + p.name})
	}
}

// checkStudyImage runs validate's host check of a study's container image
// (t.studyHost): render and launch refuse an image that is not an existing
// regular file on the host that compiles the job, so validate does too.
func (t *tree) checkStudyImage(base string, s *yaml.Node) {
	img := get(get(s, "container"), "image")
	if t.studyHost == noHostChecks || !isString(img) || !strings.HasPrefix(img.Value, "/") || strings.ContainsAny(img.Value, "\x00\n\r") {
		return // the schema reports a relative or multi-line path
	}
	path := base + ".container.image"
	if t.studyHost == hostChecksOffline {
		t.skip(img, path, imageFileCheck)
		return
	}
	if msg := checkImageFile(img.Value); msg != "" {
		t.add(problem.Rule, img, path, msg, "render and launch refuse a study whose image is missing: fix the path or copy the image there; "+
			"validate --offline skips this check where the image is absent")
	}
}

// checkEnvName reports a malformed or launcher-owned study variable name.
func (t *tree) checkEnvName(n *yaml.Node, path, name string) {
	if !IsValidEnvName(name) {
		t.add(problem.Schema, n, path, fmt.Sprintf("is not a valid environment name: must match [A-Za-z_][A-Za-z0-9_]* (got %q)", name), "")
		return
	}
	if IsLauncherOwnedEnvName(name) {
		t.add(problem.Schema, n, path, fmt.Sprintf("%s is launcher-owned and cannot be set by a study", name), launcherOwnedHint)
	}
}

// checkMountDestination says what is wrong with a container mount
// destination, or "": it must be a normalised absolute path (no "." or
// ".." parts, no doubled slashes) and not /, /proc, /sys, /dev or below.
func checkMountDestination(dst string) string {
	if !strings.HasPrefix(dst, "/") {
		return "must be an absolute path"
	}
	if strings.ContainsAny(dst, ":,") {
		return "must not contain ':' or ','"
	}
	trimmed := strings.TrimRight(dst, "/")
	if trimmed == "" || path.Clean(dst) != trimmed || strings.HasPrefix(dst, "//") {
		if trimmed == "" {
			return "must not be /"
		}
		return fmt.Sprintf("must be a normalised path (got %q, normalised %q)", dst, path.Clean(dst))
	}
	for _, forbidden := range []string{"/proc", "/sys", "/dev"} {
		if trimmed == forbidden || strings.HasPrefix(trimmed, forbidden+"/") {
			return fmt.Sprintf("must not be %s or below it", forbidden)
		}
	}
	return ""
}

// pathsOverlap says whether one cleaned absolute path equals or contains
// the other.
func pathsOverlap(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	if a == b || a == "/" || b == "/" {
		return true
	}
	return strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// decodeStudy reads one validated study.
func decodeStudy(name string, s *yaml.Node) Study {
	st := Study{Name: name}
	st.Image = optString(get(get(s, "container"), "image"))
	st.Datasets = decodeEntries(get(s, "datasets"), func(name string) Dataset { return Dataset{Name: name, Type: "mount"} })
	for _, p := range pairs(get(s, "env")) {
		st.Env = append(st.Env, EnvVar{Name: p.name, Value: scalarText(p.val)})
	}
	st.SecretEnv = decodeEntries(get(s, "secret_env"), func(name string) SecretEnv { return SecretEnv{Name: name} })
	st.SecretMounts = decodeEntries(get(s, "secret_mounts"), func(name string) SecretMount { return SecretMount{Name: name, Mode: "ro"} })
	if sl := get(s, "slurm"); sl != nil {
		st.Slurm = &StudySlurm{Partition: scalarText(get(sl, "partition")), Account: scalarText(get(sl, "account")), QOS: scalarText(get(sl, "qos"))}
		_ = sl.Decode(st.Slurm) // validated
	}
	return st
}

// decodeEntries decodes the entries of a validated mapping, in file order,
// each into the value entry makes for its name.
func decodeEntries[T any](m *yaml.Node, entry func(name string) T) []T {
	var out []T
	for _, p := range pairs(m) {
		v := entry(p.name)
		_ = p.val.Decode(&v) // validated: the schema settled every value's type
		out = append(out, v)
	}
	return out
}

// SecretEnvNames lists every environment name that holds a secret in this
// study runtime: each study's secret_env names and their sources (nil for
// a nil runtime). StudySecretEnvNames reads the same names from a file
// without validating it.
func (rt *StudyRuntime) SecretEnvNames() []string {
	if rt == nil {
		return nil
	}
	var names []string
	for _, st := range rt.Studies {
		for _, s := range st.SecretEnv {
			names = append(names, s.Name, s.Source)
		}
	}
	return names
}

// StudySecretEnvNames lists every environment name that the study runtime
// file at path names as a secret: each secret_env variable and its source,
// of every study. It is for processes that only need to keep those names
// out of an environment (a wait, a status): it reads the YAML without
// validating it, so it costs no schema compile, and on a file that does
// not validate it still returns every name it can find — a superset is
// the safe side for a list of names to drop. A file that cannot be read
// or parsed gives nil.
func StudySecretEnvNames(path string) []string {
	data, _, probs := ReadInput(path, false)
	if probs != nil {
		return nil
	}
	doc, err := decodeOne(data)
	if err != nil || doc == nil || len(doc.Content) == 0 {
		return nil
	}
	var names []string
	studies := get(doc.Content[0], "studies")
	if studies == nil || studies.Kind != yaml.MappingNode {
		return nil
	}
	for i := 1; i < len(studies.Content); i += 2 {
		env := get(studies.Content[i], "secret_env")
		if env == nil || env.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(env.Content); j += 2 {
			names = append(names, env.Content[j].Value)
			if src := get(env.Content[j+1], "source"); src != nil && src.Kind == yaml.ScalarNode {
				names = append(names, src.Value)
			}
		}
	}
	return names
}
