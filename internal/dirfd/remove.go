package dirfd

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// RemoveAll removes the entry name of d and, when it is a directory,
// everything below it, through descriptors only: each directory is opened
// with O_NOFOLLOW and checked to be the directory that was listed (device
// and inode), a symlink is unlinked and never followed, and a directory on
// another filesystem (a mount point) is neither entered nor removed
// (errOtherFilesystem). Directories without write or search permission for
// their owner are made 0700 first (through a descriptor of exactly that
// directory). With want, the entry must be that file (else ErrChanged and
// nothing is removed). A missing entry is not an error.
//
// It goes on after a failure and returns the first error: what could not
// be removed stays, everything else is gone. A few workers unlink in
// parallel (on a busy disk each unlink can wait for the journal), a
// directory or a batch of files each.
func (d *Dir) RemoveAll(name string, want *FileID) error {
	r := &remover{sem: make(chan struct{}, removeWorkers)}
	return d.removeAll(name, want, r)
}

// removeWorkers caps the goroutines of one RemoveAll, and removeBatch is
// how many files of one directory a worker takes at a time.
const (
	removeWorkers = 8
	removeBatch   = 64
)

// remover is the shared state of one RemoveAll: its free workers and its
// first error.
type remover struct {
	sem   chan struct{}
	mu    sync.Mutex
	first error
}

func (r *remover) keep(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	if r.first == nil {
		r.first = err
	}
	r.mu.Unlock()
}

// spawn runs f on a free worker, or right here when none is free.
func (r *remover) spawn(wg *sync.WaitGroup, f func()) {
	select {
	case r.sem <- struct{}{}:
		wg.Go(func() {
			defer func() { <-r.sem }()
			f()
		})
	default:
		f()
	}
}

func (d *Dir) removeAll(name string, want *FileID, r *remover) error {
	if err := checkName(name); err != nil {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	st, err := d.Lstat(name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if want != nil && IDOf(&st) != *want {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: ErrChanged}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return d.unlink(name, 0)
	}
	return d.removeDir(name, st, r)
}

func (d *Dir) unlink(name string, flags int) error {
	if err := unix.Unlinkat(d.fd, name, flags); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// removeDir empties and removes the directory name of d, which lstat
// described as st.
func (d *Dir) removeDir(name string, st unix.Stat_t, r *remover) error {
	if st.Dev != d.st.Dev {
		return &os.PathError{Op: "remove", Path: d.Join(name), Err: errOtherFilesystem}
	}
	sub, err := d.openForRemoval(name, st)
	if err != nil {
		return err
	}
	first := sub.removeContents(r)
	sub.Close()
	if err := d.unlink(name, unix.AT_REMOVEDIR); err != nil && first == nil {
		first = err
	}
	return first
}

// removeContents removes every entry of d: batches of files and each
// subdirectory on a free worker (d stays open until all are done).
func (d *Dir) removeContents(r *remover) error {
	ents, err := d.Entries()
	local := &remover{}
	local.keep(err)
	var files, dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		} else {
			files = append(files, e.Name())
		}
	}
	var wg sync.WaitGroup
	for len(files) > 0 {
		batch := files[:min(len(files), removeBatch)]
		files = files[len(batch):]
		r.spawn(&wg, func() {
			for _, name := range batch {
				err := unix.Unlinkat(d.fd, name, 0)
				switch {
				case err == nil || errors.Is(err, unix.ENOENT):
				case errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM):
					// Replaced by a directory since the listing: look again.
					local.keep(d.removeAll(name, nil, r))
				default:
					local.keep(&os.PathError{Op: "remove", Path: d.Join(name), Err: err})
				}
			}
		})
	}
	for _, name := range dirs {
		r.spawn(&wg, func() { local.keep(d.removeAll(name, nil, r)) })
	}
	wg.Wait()
	return local.first
}

// openForRemoval opens the directory name of d (described by st) so that
// its entries can be removed: readable, searchable and writable by its
// owner, and verified to be the directory st describes.
func (d *Dir) openForRemoval(name string, st unix.Stat_t) (*Dir, error) {
	const need = 0o700
	sub, err := d.OpenDir(name)
	if errors.Is(err, unix.EACCES) {
		// No read or search permission: chmod exactly this directory,
		// through an O_PATH descriptor that cannot be a symlink.
		if err := d.chmodEntry(name, st, need); err != nil {
			return nil, err
		}
		sub, err = d.OpenDir(name)
	}
	if err != nil {
		return nil, err
	}
	if sub.ID() != IDOf(&st) {
		sub.Close()
		return nil, &os.PathError{Op: "remove", Path: d.Join(name), Err: ErrChanged}
	}
	if os.Geteuid() != 0 && sub.st.Mode&need != need {
		if err := sub.Chmod(os.FileMode(sub.st.Mode&0o777 | need)); err != nil {
			sub.Close()
			return nil, err
		}
	}
	return sub, nil
}

// chmodEntry sets the mode of the directory name of d, which must still be
// the file st describes.
func (d *Dir) chmodEntry(name string, st unix.Stat_t, mode uint32) error {
	fd, err := openat(d.fd, name, pathFlags, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return &os.PathError{Op: "stat", Path: d.Join(name), Err: err}
	}
	if IDOf(&now) != IDOf(&st) {
		return &os.PathError{Op: "chmod", Path: d.Join(name), Err: ErrChanged}
	}
	err = unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if Unsupported(err) {
		// fchmodat2 is Linux 6.6+: chmod the descriptor through /proc,
		// which names exactly this inode.
		err = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode)
	}
	if err != nil {
		return &os.PathError{Op: "chmod", Path: d.Join(name), Err: err}
	}
	return nil
}
