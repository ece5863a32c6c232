package schema

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Acceptance findings: every independent kit problem at once, a walk of the
// kit, one site's reading of a job meta, kind detection, hints and "did you
// mean".

func TestEditDistanceCaseAndTransposition(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"mtsl", "mtls", 1}, // adjacent transposition is one edit
		{"mTLS", "mtls", 0}, // case is ignored
		{"NONE", "none", 0}, // case is ignored
		{"ab", "ba", 1},     // transposition
		{"abc", "ca", 3},    // OSA: no edit of a transposed pair
		{"kitten", "sitting", 3} /* plain Levenshtein */, {"", "abc", 3},
		{"partiiton", "partition", 1},
	} {
		if got := editDistance(tc.a, tc.b, 10); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := editDistance("abcdef", "zzzzzz", 2); got != 2 {
		t.Errorf("limit not applied: %d", got)
	}
}

func TestDidYouMeanCaseAndTransposition(t *testing.T) {
	sec := []string{"mtls", "clear"}
	sandbox := []string{"apptainer", "pyxis", "none"}
	for _, tc := range []struct {
		got     string
		allowed []string
		want    string
	}{
		{"mtsl", sec, "did you mean `mtls`?"},
		{"mTLS", sec, "did you mean `mtls`?"},
		{"MTLS", sec, "did you mean `mtls`?"},
		{"NONE", sandbox, "did you mean `none`?"},
		{"Apptainer", sandbox, "did you mean `apptainer`?"},
		{"apptainr", sandbox, "did you mean `apptainer`?"},
		{"mtl", sec, "did you mean `mtls`?"},
		{"clea", sec, "did you mean `clear`?"},
		{"docker", sandbox, ""},
	} {
		if got := didYouMeanValue(tc.got, tc.allowed); got != tc.want {
			t.Errorf("didYouMeanValue(%q) = %q, want %q", tc.got, got, tc.want)
		}
	}
	if got := didYouMean("Python_Path", []string{"python_path", "sandbox"}); got != "did you mean `python_path`?" {
		t.Errorf("key case: %q", got)
	}
	if got := didYouMean("snadbox", []string{"python_path", "sandbox"}); got != "did you mean `sandbox`?" {
		t.Errorf("key transposition: %q", got)
	}
}

func TestSlurmConfigValueSuggestions(t *testing.T) {
	_, probs := ParseSlurmConfig("c.yaml", []byte("runtime: slurm\njob_launcher:\n  sandbox: NONE\n  python_path: /p\n  internal_connection_security: mtsl\n"))
	want := []string{
		`c.yaml:3:12: job_launcher.sandbox: must be one of apptainer, pyxis, none (got "NONE") (did you mean ` + "`none`" + `?)`,
		`c.yaml:5:33: job_launcher.internal_connection_security: must be one of mtls, clear (got "mtsl") (did you mean ` + "`mtls`" + `?)`,
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// TestLoadKitReportsIndependentProblems: a kit with two role files, no
// rootCA.pem and a resources.json.default that is not an object reports all
// three at once (before, only the role files).
func TestLoadKitReportsIndependentProblems(t *testing.T) {
	dir := makeKit(t, "client", "site-1", map[string][]byte{
		"startup/fed_server.json":      []byte(`{}`),
		"startup/rootCA.pem":           nil,
		"local/resources.json.default": []byte(`[1]`),
		"local/study_runtime.yaml":     []byte("format_version: 3\n"),
	})
	os.Remove(filepath.Join(dir, "startup/rootCA.pem"))
	kit, probs := LoadKit(dir)
	if kit != nil {
		t.Error("got a kit despite problems")
	}
	want := []string{
		dir + "/local/resources.json.default: must be a JSON object",
		dir + "/local/study_runtime.yaml:1:17: format_version: must be 2 (got 3)",
		dir + "/startup: holds more than one role file (fed_server.json, fed_client.json) (keep exactly one)",
		dir + "/startup/rootCA.pem: is missing: a startup kit needs startup/rootCA.pem",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}

	// Missing startup/ does not hide local/'s problems.
	dir = makeKit(t, "client", "site-2", map[string][]byte{"local/resources.json.default": []byte(`"x"`)})
	if err := os.RemoveAll(filepath.Join(dir, "startup")); err != nil {
		t.Fatal(err)
	}
	_, probs = LoadKit(dir)
	want = []string{
		dir + "/local/resources.json.default: must be a JSON object",
		dir + "/startup: must be a directory of the startup kit (is this the top folder of a provisioned kit?)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("no startup/:\n got %q\nwant %q", got, want)
	}
}

// TestValidateKitChecksConfigDespiteKitProblems: the kit's config.yaml is
// validated even when the kit itself has problems.
func TestValidateKitChecksConfigDespiteKitProblems(t *testing.T) {
	dir := makeKit(t, "client", "site-1", map[string][]byte{
		"config.yaml":              []byte("runtime: slurm\njob_launcher: {sandbox: nope, python_path: x}\n"),
		"local/study_runtime.yaml": []byte("format_version: 2\nstudies:\n  s1:\n    env: {PYTHONPATH: /x}\n"),
	})
	probs := Validate(KindKit, dir, "")
	var paths []string
	for _, p := range probs {
		paths = append(paths, strings.TrimPrefix(p.File, dir+"/")+" "+p.Path)
	}
	want := []string{"config.yaml job_launcher.sandbox", "config.yaml job_launcher.python_path", "local/study_runtime.yaml studies.s1.env.PYTHONPATH"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("\n got %q\nwant %q", paths, want)
	}
	// A server kit with an invalid study runtime still gets the parent check.
	dir = makeKit(t, "server", "srv", map[string][]byte{
		"config.yaml":              []byte("runtime: slurm\njob_launcher: {sandbox: none, python_path: /p}\nparent: {}\n"),
		"local/study_runtime.yaml": []byte("format_version: 3\n"),
	})
	probs = Validate(KindKit, dir, "")
	if len(probs) != 2 || probs[0].Path != "parent" || probs[1].Path != "format_version" {
		t.Errorf("server kit: %q", problemLines(probs))
	}
}

// TestLoadKitWalk: entries prepare cannot copy are problems naming their
// path in words; a symlink to a regular file is fine; KIT/prepared is not
// entered.
func TestLoadKitWalk(t *testing.T) {
	dir := makeKit(t, "client", "site-1", nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(dir, "startup"), filepath.Join(dir, "local", "dir-link")))
	must(os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")))
	must(os.Symlink(filepath.Join(dir, "startup", "client.key"), filepath.Join(dir, "local", "file-link")))
	must(os.Symlink("/dev/null", filepath.Join(dir, "local", "null-link")))
	must(os.MkdirAll(filepath.Join(dir, "transfer", "deep"), 0o755))
	must(syscall.Mkfifo(filepath.Join(dir, "transfer", "deep", "fifo"), 0o600))
	must(os.MkdirAll(filepath.Join(dir, "prepared", "slurm"), 0o755))
	must(syscall.Mkfifo(filepath.Join(dir, "prepared", "slurm", "fifo"), 0o600))
	sock := filepath.Join(dir, "local", "sock")
	l, err := net.Listen("unix", sock)
	must(err)
	defer l.Close()

	_, probs := LoadKit(dir)
	want := []string{
		dir + "/dangling: dangling symlink: its target " + dir + "/nowhere does not exist (remove the symlink or make it point at a regular file)",
		dir + "/local/dir-link: symlink to a directory; prepare copies regular files and real directories only (replace the symlink with a real directory)",
		dir + "/local/null-link: symlink to a character device; a kit holds regular files and directories only (remove it from the kit)",
		dir + "/local/sock: socket; a kit holds regular files and directories only (remove it from the kit)",
		dir + "/transfer/deep/fifo: named pipe (FIFO); a kit holds regular files and directories only (remove it from the kit)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}

	// KIT/prepared that is not a directory is left out too, and does not
	// end the walk of the top level (startup/ and transfer/ sort after it).
	must(os.RemoveAll(filepath.Join(dir, "prepared")))
	must(syscall.Mkfifo(filepath.Join(dir, "prepared"), 0o600))
	if got := problemLines(func() Problems { _, p := LoadKit(dir); return p }()); !reflect.DeepEqual(got, want) {
		t.Errorf("prepared as a FIFO:\n got %q\nwant %q", got, want)
	}

	// A kit named through a symlink is walked too, with paths as named.
	link := filepath.Join(t.TempDir(), "kit-link")
	must(os.Symlink(dir, link))
	_, probs = LoadKit(link)
	if len(probs) != len(want) || probs[0].File != link+"/dangling" {
		t.Errorf("kit through a symlink: %q", problemLines(probs))
	}
}

// TestLoadKitFIFOStudyRuntime: a named pipe where a kit file belongs is
// reported by the walk and never opened (opening it would block).
func TestLoadKitFIFOStudyRuntime(t *testing.T) {
	dir := makeKit(t, "client", "site-1", map[string][]byte{"local/resources.json.default": nil})
	for _, f := range []string{"local/study_runtime.yaml", "local/resources.json.default"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, probs := LoadKit(dir)
	want := []string{
		dir + "/local/resources.json.default: named pipe (FIFO); a kit holds regular files and directories only (remove it from the kit)",
		dir + "/local/study_runtime.yaml: named pipe (FIFO); a kit holds regular files and directories only (remove it from the kit)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	fifo := filepath.Join(dir, "local/study_runtime.yaml")
	_, probs = LoadStudyRuntime(fifo)
	if got := problemLines(probs); len(got) != 1 || got[0] != fifo+": is a named pipe (FIFO), not a regular file" {
		t.Errorf("LoadStudyRuntime of a FIFO: %q", got)
	}
}

// TestParseJobMetaOneSite: with a site, another site's malformed section
// does not fail the reading; without a site it does.
func TestParseJobMetaOneSite(t *testing.T) {
	data := []byte(`{
  "resource_spec": {"site-1": {"num_of_gpus": 2}, "site-2": {"num_of_gpus": -1, "memory": "1GB"}},
  "launcher_spec": {
    "default": {"slurm": {"time": "01:00:00"}},
    "site-1": {"slurm": {"gpus_per_node": 2}},
    "site-2": {"slurm": {"nodes": 0, "bogus": 1, "time": "1 h"}},
    "site-3": "not a mapping"
  }
}`)
	m, probs := ParseJobMeta("meta.json", data, "site-1")
	if probs != nil {
		t.Fatalf("site-1: %q", problemLines(probs))
	}
	if m.Slurm.Time != "01:00:00" || m.Slurm.GPUsPerNode == nil || *m.Slurm.GPUsPerNode != 2 || *m.Resources.NumOfGPUs != 2 {
		t.Errorf("site-1 reading: %+v", m)
	}
	_, probs = ParseJobMeta("meta.json", data, "site-2")
	var paths []string
	for _, p := range probs {
		paths = append(paths, p.Path)
	}
	want := []string{"resource_spec.site-2.num_of_gpus", "resource_spec.site-2.memory",
		"launcher_spec.site-2.slurm.nodes", "launcher_spec.site-2.slurm.bogus", "launcher_spec.site-2.slurm.time"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("site-2:\n got %q\nwant %q", paths, want)
	}
	_, probs = ParseJobMeta("meta.json", data, "")
	if len(probs) != len(want)+1 || probs[len(probs)-1].Path != "launcher_spec.site-3" {
		t.Errorf("every site: %q", problemLines(probs))
	}
	// default and the top level are every site's business.
	_, probs = ParseJobMeta("meta.json", []byte(`{"study": 3, "launcher_spec": {"default": {"slurm": {"nodes": 0}}}}`), "site-9")
	if len(probs) != 2 || probs[0].Path != "study" || probs[1].Path != "launcher_spec.default.slurm.nodes" {
		t.Errorf("default: %q", problemLines(probs))
	}
	_, probs = ParseJobMeta("meta.json", []byte(`{"resource_spec": [1]}`), "site-9")
	if len(probs) != 1 || probs[0].Path != "resource_spec" {
		t.Errorf("resource_spec not a mapping: %q", problemLines(probs))
	}
}

func TestDetectKindUnknown(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, content, kind string
		problems            bool
	}{
		{"README.md", "# Title\n\nText: with [a colon\n", "", false},
		{"run.sh", "#!/bin/sh\necho: a: b\n", "", false},
		{"notes.txt", "just words\n", "", false},
		{"broken.yaml", "a: b\n c: d: e\n", "", true},
		{"broken.json", "{", KindJobMeta, false},
		{"slurm.yaml", "foo: 1\n", KindSlurmConfig, false},
		{"config.yaml", "a: [\n", KindSlurmConfig, false},
		{"c.txt", "runtime: slurm\n", KindSlurmConfig, false},
		{"other.yaml", "name: x\n", "", false},
	} {
		kind, probs := DetectKind(write(tc.name, tc.content))
		if kind != tc.kind || (probs != nil) != tc.problems {
			t.Errorf("%s: kind %q problems %q, want %q (problems %v)", tc.name, kind, problemLines(probs), tc.kind, tc.problems)
		}
	}
}

// TestProblemKinds: each problem's Kind is set where it is made: a read
// failure, a syntax error, the YAML structure, a key or value of the
// schema, a rule across keys, and a kit's layout.
func TestProblemKinds(t *testing.T) {
	_, probs := ParseSlurmConfig("c.yaml", []byte("runtime: slurm\njob_launcher: {sandbox: none, python_path: p, image: /x.sif}\nruntime: x\nbase: &a {}\nx: *a\n"))
	got := map[string]problem.Kind{}
	atKey := map[string]bool{}
	for _, p := range probs {
		got[p.Path+": "+p.Message] = p.Kind
		atKey[p.Path] = p.AtKey
	}
	want := map[string]problem.Kind{
		"runtime: duplicate key (first defined at line 1)":               problem.Structure,
		"x: YAML aliases are not supported":                              problem.Structure,
		"job_launcher.python_path: must be an absolute path (got \"p\")": problem.Schema,
		"base: unknown key (allowed: job_launcher, parent, runtime)":     problem.Schema,
		"x: unknown key (allowed: job_launcher, parent, runtime)":        problem.Schema,
		"job_launcher.image: must not be set when sandbox is none":       problem.Rule,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %v\nwant %v", got, want)
	}
	if !atKey["base"] || atKey["job_launcher.python_path"] || atKey["runtime"] {
		t.Errorf("AtKey: only an unknown key is about the key itself: %v", atKey)
	}
	dir := t.TempDir()
	kinds := func(ps Problems) []problem.Kind {
		var ks []problem.Kind
		for _, p := range ps {
			ks = append(ks, p.Kind)
		}
		return ks
	}
	if _, ps := LoadSlurmConfig(filepath.Join(dir, "missing.yaml")); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Read}) {
		t.Errorf("missing file: %v %v", ps, kinds(ps))
	}
	if _, ps := LoadSlurmConfig(dir); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Layout}) {
		t.Errorf("a directory as a file: %v %v", ps, kinds(ps))
	}
	if _, ps := ParseSlurmConfig("c.yaml", []byte("a: [\n")); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Syntax}) {
		t.Errorf("syntax: %v %v", ps, kinds(ps))
	}
	if _, ps := ParseSlurmConfig("c.yaml", []byte("- a\n")); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Structure}) {
		t.Errorf("top level: %v %v", ps, kinds(ps))
	}
	if _, ps := LoadKit(dir); len(ps) == 0 || slices.ContainsFunc(ps, func(p Problem) bool { return p.Kind != problem.Layout }) {
		t.Errorf("an empty kit is a layout problem: %v %v", ps, kinds(ps))
	}
	if SchemaOf(KindKit, "k/config.yaml") != KindSlurmConfig || SchemaOf(KindKit, "k/local/study_runtime.yaml") != KindStudyRuntime ||
		SchemaOf(KindKit, "k/startup/rootCA.pem") != "" || SchemaOf(KindJobMeta, "x.json") != KindJobMeta {
		t.Error("SchemaOf")
	}
}
