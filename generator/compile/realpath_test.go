package compile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realPath must agree with Python's os.path.realpath (non-strict): full
// resolution of existing paths, the missing rest kept, dangling links
// followed, ".." applied to the resolved path.
func TestRealPath(t *testing.T) {
	base := t.TempDir()
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	mk := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(base, rel)); err != nil {
			t.Fatal(err)
		}
	}
	mk("real/a/b")
	mk("ws/local")
	link(filepath.Join(base, "real"), "abs")       // absolute link
	link("real/a", "rel")                          // relative link
	link("abs/a", "chain")                         // link through a link
	link(filepath.Join(base, "ws/future"), "dang") // dangling, into ws
	link("real/a/b/../..", "dots")                 // ".." inside a target
	link("loop1", "loop2")
	link("loop2", "loop1")
	cases := []struct{ in, want string }{
		{"real/a/b", "real/a/b"},
		{"abs/a/b", "real/a/b"},
		{"rel/b", "real/a/b"},
		{"chain/b", "real/a/b"},
		{"abs/a/missing/x", "real/a/missing/x"},
		{"abs/missing/../a", "real/a"},
		{"abs/missing/x/../../a/b", "real/a/b"},
		{"abs/missing/x/../y", "real/missing/y"},
		{"rel/b/missing/../../b", "real/a/b"},
		{"dang", "ws/future"},
		{"dang/deeper", "ws/future/deeper"},
		{"dots/a", "real/a"},
		{"nothing/at/all", "nothing/at/all"},
	}
	cache := pathCache{} // shared, as within one Resolve: same answers
	for round := 0; round < 2; round++ {
		for _, c := range cases {
			got := realPathFrom("/", filepath.Join(base, c.in), nil)
			if want := filepath.Join(base, c.want); got != want {
				t.Errorf("realPath(%s) = %s, want %s", c.in, got, want)
			}
			if got := realPathFrom("/", filepath.Join(base, c.in), cache); got != filepath.Join(base, c.want) {
				t.Errorf("round %d: cached realPathFrom(%s) = %s, want %s", round, c.in, got, filepath.Join(base, c.want))
			}
		}
	}
	// Existing paths: exactly filepath.EvalSymlinks.
	for _, in := range []string{"real/a/b", "abs/a", "chain", "dots", "/", "/etc"} {
		p := in
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, in)
		}
		want, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := realPathFrom("/", p, nil); got != want {
			t.Errorf("realPath(%s) = %s, EvalSymlinks %s", p, got, want)
		}
	}
	// A loop ends the walk without hanging.
	if got := realPathFrom("/", filepath.Join(base, "loop1", "x"), nil); !strings.HasPrefix(got, base) {
		t.Errorf("loop: %s", got)
	}
}

// A dataset source that is a dangling symlink into the workspace resolves
// into it on the compute node once the target exists: it must be refused
// like any source inside the workspace (contract §8: sources resolved,
// outside the workspace).
func TestDanglingSourceIntoWorkspaceRefused(t *testing.T) {
	f := newFixture(t, "apptainer", "client")
	f.Dir("srv")
	src := filepath.Join(f.Base, "srv", "d")
	if err := os.Symlink(filepath.Join(f.Root, "local", "later"), src); err != nil {
		t.Fatal(err)
	}
	f.Study = "format_version: 2\nstudies:\n  s1:\n    datasets:\n      d:\n        source: " + src + "\n        mode: ro\n"
	f.setMeta(map[string]any{"study": "s1"})
	_, err := f.Resolve()
	if err == nil || !strings.Contains(err.Error(), "datasets.d.source") || !strings.Contains(err.Error(), "not outside the workspace") {
		t.Fatalf("want the dangling source refused, got %v", err)
	}
}
