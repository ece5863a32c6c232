// Package fsx holds the file-creation primitives every writer in
// flare-slurm uses: files are created exclusively and never through a
// symlink, so a write can neither clobber nor be redirected; and
// Pathless, an OS error without the path its message names already.
package fsx

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// WriteExclusive creates path with O_CREAT|O_EXCL|O_NOFOLLOW and mode perm
// (exactly: the umask is not applied), writes data and, when sync is true,
// fsyncs the file. An existing path, symlink or not, is an error. On any
// failure after creation the partial file is removed.
func WriteExclusive(path string, data []byte, perm os.FileMode, sync bool) (err error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &os.PathError{Op: "create", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	// The umask may have narrowed the mode given to open; set it exactly.
	if err := f.Chmod(perm.Perm()); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if sync {
		return f.Sync()
	}
	return nil
}

// MkdirExclusive creates directory path with mode perm exactly; an existing
// path is an error (os.IsExist).
func MkdirExclusive(path string, perm os.FileMode) error {
	if err := os.Mkdir(path, perm.Perm()); err != nil {
		return err
	}
	return os.Chmod(path, perm.Perm())
}

// SyncDir fsyncs a directory, making the entries created or renamed in it
// durable.
func SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", path, err)
	}
	return nil
}
