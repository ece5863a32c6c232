// Package swap installs a fully staged directory at its final path in one
// step, so that a reader of the path sees either the complete old tree or
// the complete new one and never a mixture or nothing.
package swap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
)

// Install moves the directory staged to target, which must be on the same
// filesystem.
//
// When target does not exist, staged is renamed onto it with
// RENAME_NOREPLACE (a target that appears meanwhile is not clobbered).
// When target exists, the two are exchanged with renameat2's
// RENAME_EXCHANGE: at every instant target is the old tree or the new one.
// Afterwards staged holds the old tree and Install returns its path; the
// caller removes it. Both parent directories are fsynced.
//
// swapped reports whether target now holds the staged tree; it can be true
// together with an error (a failed fsync after the rename).
//
// Fallback: a filesystem without RENAME_EXCHANGE (EINVAL, ENOSYS or
// EOPNOTSUPP, e.g. NFS) gets two renames: target to aside, then staged to
// target. Between them target is briefly absent (never partial); if the
// second rename fails the first is undone. The old tree is then at aside.
func Install(staged, target, aside string) (old string, swapped bool, err error) {
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		if err := renameat2(unix.AT_FDCWD, staged, unix.AT_FDCWD, target, unix.RENAME_NOREPLACE); err != nil {
			if !unsupported(err) {
				return "", false, &os.LinkError{Op: "rename", Old: staged, New: target, Err: err}
			}
			if err := os.Rename(staged, target); err != nil {
				return "", false, err
			}
		}
		return "", true, syncParents(staged, target)
	} else if err != nil {
		return "", false, err
	}
	err = renameat2(unix.AT_FDCWD, staged, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE)
	if err == nil {
		return staged, true, syncParents(staged, target)
	}
	if !unsupported(err) {
		return "", false, &os.LinkError{Op: "exchange", Old: staged, New: target, Err: err}
	}
	if err := os.Rename(target, aside); err != nil {
		return "", false, err
	}
	if err := os.Rename(staged, target); err != nil {
		if undo := os.Rename(aside, target); undo != nil {
			// The old tree stays at aside: the caller must not remove it.
			return aside, false, fmt.Errorf("%w (and restoring %s from %s failed: %v)", err, target, aside, undo)
		}
		return "", false, err
	}
	return aside, true, syncParents(aside, target)
}

// renameat2 is a variable so tests can simulate a filesystem without
// RENAME_EXCHANGE.
var renameat2 = unix.Renameat2

func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

func syncParents(paths ...string) error {
	seen := map[string]bool{}
	for _, p := range paths {
		dir := filepath.Dir(p)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := fsx.SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}
