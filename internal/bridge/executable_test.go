package bridge

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExecutableKeepsSymlinks: prepare records the path the binary was run
// as, with its symlinks kept (issue 28 item 4), so an upgrade that moves
// the symlink keeps the workspace current; a path that is not this binary
// falls back to the running binary's real path.
func TestExecutableKeepsSymlinks(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "bin", "flare-slurm")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(link))
	for _, c := range []struct{ argv0, want string }{
		{link, link}, // run by its path: the symlink
		{filepath.Join(dir, "bin/../bin/flare-slurm"), link}, // cleaned
		{"flare-slurm", link},                                // found in PATH
		{other, real},                                        // not this binary
		{"/nonexistent/flare-slurm", real},                   // gone
		{"", real},
	} {
		got, err := executable(c.argv0)
		if err != nil || got != c.want {
			t.Errorf("executable(%q) = %q, %v; want %q", c.argv0, got, err, c.want)
		}
	}
}
