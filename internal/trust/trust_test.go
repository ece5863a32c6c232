package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveFollowsLinksAsTheKernel: Resolve resolves absolute and
// relative links, "." and "..", link chains, and returns the program's own
// path (what the caller runs); a link loop is refused, not followed forever.
func TestResolveFollowsLinksAsTheKernel(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	os.Mkdir(bin, 0o755)
	exe := filepath.Join(bin, "flare-slurm")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other")
	os.Mkdir(other, 0o755)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("../bin/flare-slurm", filepath.Join(other, "relative")))
	must(os.Symlink(exe, filepath.Join(other, "absolute")))
	must(os.Symlink("relative", filepath.Join(other, "chain")))
	must(os.Symlink(bin, filepath.Join(root, "bindir")))
	must(os.Symlink("loop-b", filepath.Join(other, "loop-a")))
	must(os.Symlink("loop-a", filepath.Join(other, "loop-b")))
	for _, p := range []string{
		exe,
		filepath.Join(other, "relative"),
		filepath.Join(other, "absolute"),
		filepath.Join(other, "chain"),
		filepath.Join(root, "bindir", "flare-slurm"),
		filepath.Join(other, "..", "bin", ".", "flare-slurm"),
	} {
		got, err := Resolve(p, os.Geteuid())
		if err != nil || got != exe {
			t.Errorf("Resolve(%s) = %q, %v; want %s", p, got, err, exe)
		}
	}
	if _, err := Resolve(filepath.Join(other, "loop-a"), os.Geteuid()); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("a link loop: %v, want refused as a loop", err)
	}
	if _, err := Resolve("flare-slurm", os.Geteuid()); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("a relative path: %v", err)
	}
	if got := Find("flare-slurm", "relative/dir:"+other+":"+bin); got != exe {
		t.Errorf("Find = %q, want the first absolute PATH entry holding an executable (%s)", got, exe)
	}
}
