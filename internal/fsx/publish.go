package fsx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tempInfix separates a file's name from the random suffix of its temp
// files: ".<name>.tmp-<16 hex digits>".
const tempInfix = ".tmp-"

// WriteNoReplace creates path atomically and exclusively: readers see
// either no file or the whole content, never a partial one, and an
// existing path (file, directory or symlink) is never replaced (an error
// matching os.ErrExist). The content goes to a temp file in the same
// directory (WriteTemp), which Publish then links under path. With sync,
// the temp file is fsynced before it is published and the directory
// after, so the published file is durable once WriteNoReplace returns.
func WriteNoReplace(path string, data []byte, perm os.FileMode, sync bool) error {
	return system().writeNoReplace(path, data, perm, sync)
}

func (p publisher) writeNoReplace(path string, data []byte, perm os.FileMode, sync bool) error {
	tmp, err := WriteTemp(path, data, perm, sync)
	if err != nil {
		return err
	}
	if err := p.publish(tmp, path); err != nil {
		return err
	}
	if sync {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// WriteTemp writes data to a new temp file beside path, named
// ".<base>.tmp-<random>" (see IsTempOf), created with
// O_CREAT|O_EXCL|O_NOFOLLOW and mode perm exactly, fsynced when sync is
// true. It returns the temp file's path for Publish. A crash before
// Publish leaves only this temp file: path itself never exists partially.
func WriteTemp(path string, data []byte, perm os.FileMode, sync bool) (string, error) {
	dir, base := filepath.Split(path)
	for range 4 {
		var r [8]byte
		rand.Read(r[:]) // never fails (it crashes the program instead)
		tmp := filepath.Join(dir, "."+base+tempInfix+hex.EncodeToString(r[:]))
		err := WriteExclusive(tmp, data, perm, sync)
		if err == nil {
			return tmp, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", &os.PathError{Op: "create temp file for", Path: path, Err: os.ErrExist}
}

// IsTempOf says whether name is the name of a temp file WriteTemp made for
// a file named base.
func IsTempOf(name, base string) bool {
	suffix, ok := strings.CutPrefix(name, "."+base+tempInfix)
	return ok && len(suffix) == 16 && strings.Trim(suffix, "0123456789abcdef") == ""
}

// publisher holds the system calls Publish makes: renameNoReplace
// (renameat2(RENAME_NOREPLACE)) and link (link(2)). Tests use one whose
// rename fails with EINVAL to run the link(2) fallback, or whose link
// answers EEXIST as NFS does to a retransmitted LINK.
type publisher struct {
	renameNoReplace func(from, to string) error
	link            func(from, to string) error
}

// system is the publisher of the real system calls.
func system() publisher {
	return publisher{link: unix.Link, renameNoReplace: func(from, to string) error {
		return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	}}
}

// Publish gives the complete temp file tmp its final name path, in the
// same directory, without ever replacing an existing path: on success tmp
// is gone; on failure tmp is removed and an existing path is reported as
// an error matching os.ErrExist. It does not fsync the directory.
//
// It renames with renameat2(RENAME_NOREPLACE) (ext4, xfs, btrfs, tmpfs,
// and Lustre clients that support it). Where the filesystem or kernel
// does not support the flag (EINVAL, as on NFS; ENOSYS, EOPNOTSUPP), it
// falls back to link(2), which fails on an existing name on every POSIX
// filesystem, then unlinks tmp. NFS may answer a retransmitted LINK with
// EEXIST although the first one succeeded: a link error is therefore
// checked against the result (path and tmp the same file means
// published). A crash between link and unlink leaves tmp as a second name
// of the published file, which readers ignore and job dir removal takes.
func Publish(tmp, path string) error { return system().publish(tmp, path) }

func (p publisher) publish(tmp, path string) error {
	err := p.renameNoReplace(tmp, path)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) {
		os.Remove(tmp)
		return &os.LinkError{Op: "rename (no replace)", Old: tmp, New: path, Err: err}
	}
	if err := p.link(tmp, path); err != nil && !sameFile(tmp, path) {
		os.Remove(tmp)
		return &os.LinkError{Op: "link", Old: tmp, New: path, Err: err}
	}
	// Published; a failed unlink only leaves a second name of the same
	// complete file.
	_ = unix.Unlink(tmp)
	return nil
}

func sameFile(a, b string) bool {
	sa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	sb, err := os.Lstat(b)
	return err == nil && os.SameFile(sa, sb)
}
