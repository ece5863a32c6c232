package staging

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging/stagingtest"
	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/schema"
)

// markerJSON is a resources.json.default that names output as its
// workspace, the way prepare writes it.
func markerJSON(output string) []byte {
	return fmt.Appendf(nil, `{"format_version": 2, "components": [{"id": "slurm_launcher", "path": "x", "args": {"sandbox": "none", "workspace_path": %q}}]}`+"\n", output)
}

// tree is a small workspace for output: the marker, a file saying tag, a
// read-only directory (as kits have) and a nested file.
func tree(output, tag string) []*File {
	return []*File{
		{Path: ".", Dir: true, Mode: 0o700},
		{Path: "local", Dir: true, Mode: 0o755},
		{Path: schema.ResourcesDefaultPath, Mode: 0o644, Data: markerJSON(output)},
		{Path: "startup", Dir: true, Mode: 0o500},
		{Path: "startup/tag", Mode: 0o600, Data: []byte(tag)},
		{Path: "transfer", Dir: true, Mode: 0o755},
		{Path: "transfer/a", Dir: true, Mode: 0o755},
		{Path: "transfer/a/b.txt", Mode: 0o644, Data: []byte("b " + tag)},
	}
}

// stageOnce runs a whole staging of files at output (open, check, stage,
// fill, sync, install, close) and returns the warnings.
func stageOnce(t testing.TB, output string, files []*File, force bool, opts Options) ([]string, error) {
	t.Helper()
	var warnings []string
	opts.Warn = func(m string) { warnings = append(warnings, m) }
	target, err := Open(output, nil)
	if err != nil {
		return warnings, err
	}
	defer target.Close()
	if err := target.CheckReplace(force); err != nil {
		return warnings, err
	}
	s, err := target.Stage(opts)
	if err != nil {
		return warnings, err
	}
	err = s.Fill(context.Background(), files)
	if err == nil {
		err = s.Sync()
	}
	if err == nil {
		err = s.Install()
	}
	if cerr := s.Close(); cerr != nil {
		warnings = append(warnings, cerr.Error())
	}
	return warnings, err
}

func mustStage(t testing.TB, output, tag string) {
	t.Helper()
	if w, err := stageOnce(t, output, tree(output, tag), false, Options{}); err != nil {
		t.Fatalf("staging %s: %v (warnings %q)", output, err, w)
	}
}

// digest hashes a tree without following symlinks.
func digest(t testing.TB, root string) string { return stagingtest.Digest(t, root) }

// stagings lists the staging directories beside output.
func stagings(t testing.TB, output string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(output))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix(output)) {
			out = append(out, filepath.Join(filepath.Dir(output), e.Name()))
		}
	}
	return out
}

// readTag is the tag of the workspace at output.
func readTag(t testing.TB, output string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(output, "startup", "tag"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tempDir is t.TempDir with symlinks resolved (Open takes real
// paths).
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantKind(t testing.TB, err error, kind ErrorKind) *Error {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) || se.Kind != kind {
		t.Fatalf("error %v (%T), want a staging.Error of kind %d", err, err, kind)
	}
	return se
}

// bothResolvers runs f with openat2 (where the kernel has it) and with the
// openat(O_NOFOLLOW) walk of kernels without it.
func bothResolvers(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", func(t *testing.T) {
		if !dirfd.UsesOpenat2() {
			t.Log("this kernel has no openat2: both runs use the openat walk")
		}
		f(t)
	})
	t.Run("openat-walk", func(t *testing.T) {
		defer dirfd.DisableOpenat2ForTesting()()
		if dirfd.UsesOpenat2() {
			t.Fatal("openat2 still in use")
		}
		f(t)
	})
}
