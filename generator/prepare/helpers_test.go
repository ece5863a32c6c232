package prepare

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/generator/prepare/staging/stagingtest"
)

// stagingPrefix is the name prefix of the staging directories of an output.
var stagingPrefix = staging.Prefix

// repoRoot is the repository root (for examples/).
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// copyTree copies a directory tree (regular files and dirs) for tests.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is a temporary copy of an example kit with a Slurm config whose
// image is an empty stand-in file.
type fixture struct {
	dir    string // temp root
	kit    string
	config string
	image  string
	euid   func() int // Options.euid; nil means the real one
}

// newFixture copies examples/<kit> and writes config (with "@IMAGE@"
// replaced by a stand-in image path) next to it.
func newFixture(t testing.TB, kit, config string) *fixture {
	t.Helper()
	dir := t.TempDir()
	// Resolve the temp dir so that paths in outputs are the real ones.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, kit: filepath.Join(dir, kit), config: filepath.Join(dir, "slurm.yaml"), image: filepath.Join(dir, "nvflare-2.8.sif")}
	copyTree(t, filepath.Join(repoRoot(t), "examples", kit), f.kit)
	if err := os.WriteFile(f.image, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.writeConfig(t, config)
	return f
}

func (f *fixture) writeConfig(t testing.TB, config string) {
	t.Helper()
	if err := os.WriteFile(f.config, []byte(strings.ReplaceAll(config, "@IMAGE@", f.image)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exampleConfig returns examples/<name> with its image replaced by @IMAGE@.
func exampleConfig(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  image: ") {
			lines[i] = "  image: @IMAGE@"
		}
	}
	return strings.Join(lines, "\n")
}

func (f *fixture) opts(output string) Options {
	return Options{Kit: f.kit, Config: f.config, Output: output, euid: f.euid}
}

func (f *fixture) run(t testing.TB, output string) *Result {
	t.Helper()
	res, err := Run(context.Background(), f.opts(output))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func (f *fixture) render(t testing.TB, output string) *Workspace {
	t.Helper()
	ws, err := Render(f.opts(output))
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return ws
}

// digest hashes a tree: every path, type, permission bits, content and
// symlink target. A missing root digests to "absent".
func digest(t testing.TB, root string) string { return stagingtest.Digest(t, root) }

// siblings lists the entries of dir whose name starts with prefix.
func siblings(t testing.TB, dir, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustContain(t testing.TB, what string, data []byte, want string) {
	t.Helper()
	if !bytes.Contains(data, []byte(want)) {
		t.Errorf("%s does not contain %q:\n%s", what, want, data)
	}
}

// asUID makes prepare runs of this fixture see uid as their effective
// user id.
func (f *fixture) asUID(uid int) { f.euid = func() int { return uid } }
