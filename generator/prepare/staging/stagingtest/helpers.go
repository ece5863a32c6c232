package stagingtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Uid is the account the tests run attackers and removers as.
const Uid = 65534

var seedFlag = flag.Uint64("seed", 0, "random seed of the crash, signal and race tests (0: from the clock)")

// Seed returns the seed of a randomised test (-seed, else the clock) and
// logs it so that a failure can be replayed.
func Seed(t testing.TB) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (re-run with -seed %d)", s, s)
	return s
}

// digestContentBytes is the largest file Digest reads; larger ones are
// digested by inode, size, mtime and ctime.
const digestContentBytes = 64 << 20

// Digest hashes a tree without following symlinks: every path, type,
// permission bits, content (of a file above digestContentBytes: its inode,
// size, mtime and ctime) and symlink target. A missing root digests to
// "absent".
func Digest(tb testing.TB, root string) string {
	tb.Helper()
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := rel + " " + info.Mode().String()
		switch {
		case info.Mode().IsRegular() && info.Size() > digestContentBytes:
			// A large file (the size-bound tests make sparse ones of
			// gigabytes) is known by what any write or replacement
			// changes: its inode, size, mtime and ctime (which no
			// process can set back), not by reading it.
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok {
				return fmt.Errorf("%s: no stat_t", p)
			}
			line += fmt.Sprintf(" ino=%d size=%d mtime=%d ctime=%d.%09d", st.Ino, info.Size(), info.ModTime().UnixNano(), st.Ctim.Sec, st.Ctim.Nsec)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		case info.Mode()&fs.ModeSymlink != 0:
			dest, _ := os.Readlink(p)
			line += " -> " + dest
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// AsOtherAccount returns a command that runs the running test binary
// again as uid and gid 65534 with env added (its TestMain looks at env).
// The binary is copied into dir, a directory of the test's, and dir and
// its parents up to the temp directory are made searchable so that the
// other account can reach it. The caller must be root.
func AsOtherAccount(tb testing.TB, dir string, env ...string) *exec.Cmd {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatal("this test needs root (to run a process as another uid)")
	}
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		tb.Fatal(err)
	}
	exe := filepath.Join(dir, filepath.Base(self)+".other")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Uid, Gid: Uid}}
	return cmd
}
