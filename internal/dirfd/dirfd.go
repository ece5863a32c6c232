// Package dirfd works on directory trees through directory file
// descriptors, so that a tree another account can write next to is never
// entered through a symlink and never re-resolved by path: a directory is
// opened once (O_DIRECTORY|O_NOFOLLOW, or openat2 with RESOLVE_NO_SYMLINKS
// where the kernel has it), checked (type, owner, device and inode), and
// every later operation in it is relative to that descriptor (openat,
// mkdirat, unlinkat, renameat2, fstatat).
package dirfd

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FileID identifies a file on this machine: its device and inode numbers.
type FileID struct{ Dev, Ino uint64 }

// IDOf is the FileID of a stat result.
func IDOf(st *unix.Stat_t) FileID { return FileID{Dev: uint64(st.Dev), Ino: st.Ino} }

// Dir is an open directory. Its path is kept for messages only: no
// operation ever resolves it again.
type Dir struct {
	fd   int
	path string
	st   unix.Stat_t
}

// Errors that say why an entry was not used.
var (
	// ErrSymlink: a symlink stands where a directory or file was expected.
	ErrSymlink = errors.New("a symlink is in the way (symlinks are not followed here)")
	// ErrChanged: the entry is not the one that was checked or created
	// earlier (another process replaced it meanwhile).
	ErrChanged = errors.New("it was replaced by another file while prepare ran")
	// errOtherFilesystem: a directory on another filesystem (a mount
	// point), which a tree operation does not enter.
	errOtherFilesystem = errors.New("it is on another filesystem (a mount point), which is not entered")
)

const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	pathFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// walkOnly makes every lookup use the component-by-component walk instead
// of openat2 (see DisableOpenat2ForTesting).
var walkOnly atomic.Bool

// hasOpenat2 says whether openat2(2) with RESOLVE_NO_SYMLINKS works here
// (Linux 5.6+, and not blocked by a seccomp filter).
var hasOpenat2 = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: pathFlags, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err == nil {
		unix.Close(fd)
	}
	return err == nil
})

// DisableOpenat2ForTesting makes this process resolve paths with the
// openat(O_NOFOLLOW) walk that kernels without openat2 get, until restore
// is called. Tests of other packages use it to run both code paths.
func DisableOpenat2ForTesting() (restore func()) {
	old := walkOnly.Swap(true)
	return func() { walkOnly.Store(old) }
}

// UsesOpenat2 says whether lookups use openat2.
func UsesOpenat2() bool { return !walkOnly.Load() && hasOpenat2() }

func newDir(fd int, path string) (*Dir, error) {
	d := &Dir{fd: fd, path: path}
	if err := unix.Fstat(fd, &d.st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if d.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: unix.ENOTDIR}
	}
	return d, nil
}

// Open opens the directory at the absolute path p without following a
// symlink anywhere on the way: a symlink in any component is ErrSymlink.
func Open(p string) (*Dir, error) {
	if !filepath.IsAbs(p) {
		return nil, &os.PathError{Op: "open", Path: p, Err: errors.New("not an absolute path")}
	}
	root, err := unix.Open("/", pathFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	rootDir := &Dir{fd: root, path: "/"}
	defer rootDir.Close()
	return rootDir.lookup(cmp.Or(strings.TrimPrefix(filepath.Clean(p), "/"), "."), 0, false)
}

// OpenBeneath opens the directory at the slash path rel below d: no
// symlink, no "..", no mount point is crossed.
func (d *Dir) OpenBeneath(rel string) (*Dir, error) {
	if rel == "." || rel == "" { // d again: a new file description, its own offset
		fd, err := openat(d.fd, ".", dirFlags, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
		}
		return newDir(fd, d.path)
	}
	if cs := strings.Split(rel, "/"); slices.Contains(cs, "..") || slices.Contains(cs, "") {
		return nil, &os.PathError{Op: "open", Path: d.Join(rel), Err: errors.New("not a path below the directory")}
	}
	return d.lookup(rel, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_XDEV, true)
}

// lookup opens the directory rel below d with openat2 (no symlink, and
// resolve) where the kernel has it, else with the walk (sameDev: no mount
// point crossed).
func (d *Dir) lookup(rel string, resolve uint64, sameDev bool) (*Dir, error) {
	if UsesOpenat2() {
		fd, err := openat2(d.fd, rel, dirFlags, resolve|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
		switch {
		case err == nil:
			return newDir(fd, d.Join(rel))
		case errors.Is(err, unix.EXDEV):
			return nil, &os.PathError{Op: "open", Path: d.Join(rel), Err: errOtherFilesystem}
		case !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, errUseWalk):
			return nil, &os.PathError{Op: "open", Path: d.Join(rel), Err: err}
		}
		// A symlink or a non-directory on the way: the walk says which
		// component, and what it is (or, after retries, resolves it).
	}
	return d.walk(rel, sameDev)
}

// walk opens rel below d one component at a time with O_NOFOLLOW; with
// sameDev no component may lie on another device than d.
func (d *Dir) walk(rel string, sameDev bool) (*Dir, error) {
	comps := strings.Split(rel, "/")
	cur := d.fd
	var opened []int
	defer func() {
		for _, fd := range opened {
			unix.Close(fd)
		}
	}()
	for i, c := range comps {
		flags := pathFlags
		if i == len(comps)-1 {
			flags = dirFlags
		}
		fd, err := openat(cur, c, flags, 0)
		if err != nil {
			sofar := d.Join(strings.Join(comps[:i+1], "/"))
			if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				var st unix.Stat_t
				if unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					err = ErrSymlink
				}
			}
			return nil, &os.PathError{Op: "open", Path: sofar, Err: err}
		}
		if sameDev {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || st.Dev != d.st.Dev {
				unix.Close(fd)
				return nil, &os.PathError{Op: "open", Path: d.Join(strings.Join(comps[:i+1], "/")), Err: errOtherFilesystem}
			}
		}
		if i == len(comps)-1 {
			return newDir(fd, d.Join(rel))
		}
		opened = append(opened, fd)
		cur = fd
	}
	panic("unreachable")
}

// openat2 retries a few times when the kernel asks for it (EAGAIN: a
// concurrent rename while resolving); a caller that still gets EAGAIN
// falls back to the walk.
func openat2(dirfd int, path string, flags int, resolve uint64) (int, error) {
	for range 8 {
		fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{Flags: uint64(flags), Resolve: resolve})
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
	return -1, errUseWalk
}

// openat is openat(2), tried again when a signal interrupted it (EINTR),
// as os.OpenFile does: on network and FUSE filesystems, which HPC
// workspaces often sit on, an open can be interrupted by any signal the
// process takes (Go's runtime preempts with signals).
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// errUseWalk: openat2 kept asking for a retry; resolve with the walk.
var errUseWalk = errors.New("openat2 asked for retries")

// Path is the path d was opened as (for messages).
func (d *Dir) Path() string { return d.path }

// Join is Path joined with the slash path rel (for messages).
func (d *Dir) Join(rel string) string { return filepath.Join(d.path, filepath.FromSlash(rel)) }

// Fd is the descriptor, for the *at system calls of callers.
func (d *Dir) Fd() int { return d.fd }

// ID is the device and inode of d.
func (d *Dir) ID() FileID { return IDOf(&d.st) }

// Stat is what fstat said when d was opened.
func (d *Dir) Stat() unix.Stat_t { return d.st }

// Close closes the descriptor (and so releases a lock taken on it).
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not a single path component", name)
	}
	return nil
}

// Lstat is fstatat(name, AT_SYMLINK_NOFOLLOW) of the entry name of d.
func (d *Dir) Lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return st, &os.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return st, nil
}

// OpenDir opens the directory entry name of d without following a symlink
// and without entering another filesystem.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	return d.walk(name, true)
}

// Mkdir creates the directory name in d (mode perm, narrowed by the
// umask) and opens it, verifying that what it opened is a directory owned
// by this process's effective uid whose permission bits are within perm.
// With empty, it must also have no entries: in a directory other accounts
// can write, that proves it is the one just made.
func (d *Dir) Mkdir(name string, perm fs.FileMode, empty bool) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
	}
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil {
		return nil, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
	}
	sub, err := d.OpenDir(name)
	if err != nil {
		return nil, err
	}
	st := sub.st
	ok := int(st.Uid) == os.Geteuid() && fs.FileMode(st.Mode&0o7777)&^perm.Perm() == 0
	if ok && empty {
		names, err := sub.Names()
		ok = err == nil && len(names) == 0
	}
	if !ok {
		sub.Close()
		return nil, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: ErrChanged}
	}
	return sub, nil
}

// Names lists the entries of d (not "." and ".."), in directory order.
func (d *Dir) Names() ([]string, error) {
	ents, err := d.Entries()
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

// Entries lists the entries of d with their types, in directory order.
func (d *Dir) Entries() ([]fs.DirEntry, error) {
	fd, err := openat(d.fd, ".", dirFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.ReadDir(-1)
}

// Create creates the regular file name in d with
// O_CREAT|O_EXCL|O_NOFOLLOW and mode perm exactly (the umask is undone with
// fchmod when it narrowed perm; mask is the process umask).
func (d *Dir) Create(name string, perm, mask fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, &os.PathError{Op: "create", Path: d.Join(name), Err: err}
	}
	fd, err := openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: d.Join(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Join(name))
	if perm.Perm()&^mask != perm.Perm() {
		if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
			f.Close()
			_ = unix.Unlinkat(d.fd, name, 0)
			return nil, &os.PathError{Op: "chmod", Path: d.Join(name), Err: err}
		}
	}
	return f, nil
}

// Chmod sets the permission bits of d itself.
func (d *Dir) Chmod(perm fs.FileMode) error {
	return d.pathError("chmod", unix.Fchmod(d.fd, uint32(perm.Perm())))
}

// Sync is fsync(2) of d: its entries are durable.
func (d *Dir) Sync() error { return d.pathError("fsync", unix.Fsync(d.fd)) }

// SyncFilesystem is syncfs(2) of the filesystem that holds d.
func (d *Dir) SyncFilesystem() error { return d.pathError("syncfs", unix.Syncfs(d.fd)) }

// pathError is err of op on d itself, with d's path; nil for nil.
func (d *Dir) pathError(op string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: d.path, Err: err}
}

// ErrLockUnsupported: the filesystem cannot lock this directory (NFS
// without flock emulation for directories, some FUSE filesystems).
var ErrLockUnsupported = errors.New("the filesystem does not support locking a directory")

// TryLock takes an exclusive flock(2) on d without waiting: true when
// taken, false when another open file description holds it. The lock goes
// with d's descriptor: closing it (or the process ending) releases it.
func (d *Dir) TryLock() (bool, error) {
	for {
		err := unix.Flock(d.fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EINVAL),
			errors.Is(err, unix.EBADF), errors.Is(err, unix.ENOSYS):
			return false, ErrLockUnsupported
		}
		return false, &os.PathError{Op: "flock", Path: d.path, Err: err}
	}
}

// Unsupported says whether err is the answer of a filesystem or kernel
// that lacks a renameat2 flag (NFS and older Lustre answer EINVAL).
func Unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

// Rename is renameat2(2) of from's entry fromName to to's entry toName
// with flags (RENAME_EXCHANGE, RENAME_NOREPLACE, or 0 for rename(2)).
func Rename(from *Dir, fromName string, to *Dir, toName string, flags uint) error {
	if err := unix.Renameat2(from.fd, fromName, to.fd, toName, flags); err != nil {
		return &os.LinkError{Op: cmp.Or(renameOps[flags], "rename"), Old: from.Join(fromName), New: to.Join(toName), Err: err}
	}
	return nil
}

// renameOps name Rename's operation by its flag in its errors (the kernel
// refuses the two together).
var renameOps = map[uint]string{unix.RENAME_EXCHANGE: "exchange", unix.RENAME_NOREPLACE: "rename (no replace)"}
