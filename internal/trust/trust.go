// Package trust is the one rule for a program flare-slurm runs that must
// not be replaceable by another account: the Slurm commands, getent, and
// (in the launcher bridge, which mirrors this rule in Python) the
// flare-slurm binary itself. A program another account could replace
// would run as this account, and sbatch and the binary read every job's
// credentials.
package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Find returns the first executable regular file named name in the
// absolute directories of path (a PATH value), "" when there is none. It
// does not check the file: Check does.
func Find(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		c := filepath.Join(dir, name)
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return c
		}
	}
	return ""
}

// Resolve resolves the symlinks of the absolute path p and checks the
// program it names: an executable regular file that Check accepts. It
// returns the resolved path.
func Resolve(p string, euid int) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s cannot be resolved: %v", p, unwrap(err))
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() || unix.Access(real, unix.X_OK) != nil || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s (resolved to %s) is not an executable regular file", p, real)
	}
	if err := Check(real, euid); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return real, nil
}

// Check refuses a program (real: its path, symlinks resolved) that another
// account could replace: the file and every directory above it must be
// owned by root or by the account that runs it (euid), and none may be
// writable by another account: not by every account, and not by a group
// other than root's (gid 0). A sticky directory (like /tmp) may be
// writable by others, since they cannot rename or remove what they do not
// own in it.
func Check(real string, euid int) error {
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("cannot check %s: %v", real, unwrap(err))
	}
	if err := entry(real, real, st, euid, false); err != nil {
		return err
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		dst, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("cannot check %s, a directory above %s: %v", dir, real, unwrap(err))
		}
		if err := entry(real, dir, dst, euid, true); err != nil {
			return err
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

// entry checks one entry (the program or a directory above it).
func entry(program, path string, st os.FileInfo, euid int, isDir bool) error {
	what := path + " is"
	if path != program {
		what = program + " is in " + path + ", which is"
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if sys.Uid != 0 && int(sys.Uid) != euid {
		return fmt.Errorf("%s owned by uid %d, neither root nor this account (uid %d), so that account could replace the program; fix: use a program owned by root or by this account", what, sys.Uid, euid)
	}
	m := st.Mode()
	if isDir && m&os.ModeSticky != 0 {
		return nil
	}
	switch {
	case m.Perm()&0o002 != 0:
		return fmt.Errorf("%s writable by every account (mode %04o), so any of them could replace the program; fix: chmod o-w %s", what, m.Perm(), path)
	case m.Perm()&0o020 != 0 && sys.Gid != 0:
		return fmt.Errorf("%s writable by group %d (mode %04o), so its members could replace the program; fix: chmod g-w %s", what, sys.Gid, m.Perm(), path)
	}
	return nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
