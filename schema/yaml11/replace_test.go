package yaml11

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

// TestFixKeepsOwnerAndMode: fmt --fix replaces the file with a new one
// (never written through a link) that keeps the old one's mode and, run as
// root, its owner: a study admin's file must not become root's.
func TestFixKeepsOwnerAndMode(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "needs root to give the file another owner")
	}
	p := filepath.Join(t.TempDir(), "study_runtime.yaml")
	if err := os.WriteFile(p, []byte("format_version: 2\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := replaceKeepingOwner(p, []byte("format_version: \"2\"\n"), st); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	sys := after.Sys().(*syscall.Stat_t)
	if sys.Uid != 4242 || sys.Gid != 4343 || after.Mode().Perm() != 0o640 || os.SameFile(st, after) {
		t.Errorf("after --fix: uid %d gid %d mode %v, same inode %v; want 4242 4343 0640, a new file", sys.Uid, sys.Gid, after.Mode().Perm(), os.SameFile(st, after))
	}
}
