package staging

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/shell"
)

// Options configure Stage.
type Options struct {
	// Warn receives what the user should know that did not stop the
	// prepare (abandoned staging directories removed or left).
	Warn func(string)

	// Test hooks; nil means the real system call.
	rename   func(from *dirfd.Dir, fromName string, to *dirfd.Dir, toName string, flags uint) error
	remove   func(d *dirfd.Dir, name string, want *dirfd.FileID) error
	tryLock  func(d *dirfd.Dir) (bool, error)
	syncDirs func(ds ...*dirfd.Dir) error
}

// Staging is one staging directory beside an output: made and locked by
// Stage, filled by Fill, made durable by Sync, swapped into place by
// Install, removed (with the old workspace) by Close.
type Staging struct {
	target *Target
	opts   Options

	parent  *dirfd.Dir   // the output's parent
	created []createdDir // parents of the output Stage created, outermost first
	name    string       // of the staging directory, in parent
	path    string       // of the staging directory, for messages
	dir     *dirfd.Dir   // the staging directory, locked
	root    *dirfd.Dir   // its newName entry: the new workspace root
	dirs    map[string]dirfd.FileID

	installed bool   // the new workspace is at the output
	old       string // the entry of dir that holds the old workspace after Install
	keep      bool   // dir holds the only copy of the old workspace
	closed    bool
}

// createdDir is a directory Stage created (dir, open): its name in parent.
type createdDir struct {
	parent, dir *dirfd.Dir
	name        string
}

func (s *Staging) warnf(format string, args ...any) {
	if s.opts.Warn != nil {
		s.opts.Warn(fmt.Sprintf(format, args...))
	}
}

// Stage creates the output's missing parents (0755), removes the abandoned
// staging directories of earlier prepares of this output, and makes a new
// staging directory beside the output (0700), verified to be the empty
// directory just made and locked until Close. On error everything it
// created is gone again.
func (t *Target) Stage(opts Options) (_ *Staging, err error) {
	if opts.rename == nil {
		opts.rename = dirfd.Rename
	}
	if opts.remove == nil {
		opts.remove = (*dirfd.Dir).RemoveAll
	}
	if opts.tryLock == nil {
		opts.tryLock = (*dirfd.Dir).TryLock
	}
	if opts.syncDirs == nil {
		opts.syncDirs = syncDirs
	}
	s := &Staging{target: t, opts: opts, dirs: map[string]dirfd.FileID{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	parent := t.ancestor
	for _, name := range t.missing {
		d, err := parent.Mkdir(name, 0o755, true)
		if errors.Is(err, unix.EEXIST) {
			return nil, stagingErr(ioFailed, err, "re-run prepare", "cannot create the output's parent directory %s: it appeared while prepare ran", t.named(parent.Join(name)))
		}
		if err != nil {
			return nil, stagingErr(ioFailed, err, "check the path and its permissions", "cannot create the output's parent directory %s: %v", t.named(parent.Join(name)), err)
		}
		s.created = append(s.created, createdDir{parent: parent, dir: d, name: name})
		parent = d
	}
	s.parent = parent
	s.cleanStale(parent)

	s.name = stagingName(t.Path)
	s.path = parent.Join(s.name)
	dir, err := parent.Mkdir(s.name, 0o700, true)
	if err != nil {
		return nil, stagingErr(ioFailed, err, "the output's parent directory must be writable", "cannot create a staging directory beside %s: %v", t.named(t.Path), err)
	}
	s.dir = dir
	locked, err := opts.tryLock(dir)
	if err != nil && !errors.Is(err, dirfd.ErrLockUnsupported) {
		return nil, stagingErr(ioFailed, err, "check the filesystem", "cannot lock the staging directory %s: %v", t.named(s.path), err)
	}
	if err == nil && !locked {
		return nil, stagingErr(ioFailed, dirfd.ErrChanged, "re-run prepare", "the staging directory %s is locked by another process", t.named(s.path))
	}
	root, err := dir.Mkdir(newName, 0o700, true)
	if err != nil {
		return nil, stagingErr(ioFailed, err, "check the filesystem", "cannot create the staging tree in %s: %v", t.named(s.path), err)
	}
	s.root = root
	s.dirs["."] = root.ID()
	return s, nil
}

// Sync makes the staged tree durable: one syncfs(2) of its filesystem
// instead of one fsync per file (contract §13).
func (s *Staging) Sync() error {
	if err := s.dir.SyncFilesystem(); err != nil {
		return stagingErr(ioFailed, err, "check the filesystem", "cannot flush the staged workspace to disk: %v", err)
	}
	return nil
}

// Install puts the staged tree at the output in one step, so that a reader
// of the output sees the complete old tree or the complete new one.
//
// A new output gets renameat2(RENAME_NOREPLACE) (an output that appears
// meanwhile is not clobbered). An existing one, still the directory
// Open checked, is exchanged with renameat2(RENAME_EXCHANGE); the
// old tree is then inside the staging directory and Close removes it.
// Only the output's parent is fsynced afterwards: its entry is what makes
// the new workspace durable (the staging directory's entries are garbage).
//
// Fallback: a filesystem without RENAME_EXCHANGE (EINVAL, ENOSYS or
// EOPNOTSUPP, e.g. NFS) gets two renames: the output into the staging
// directory, then the new tree to the output. Between them the output is
// briefly absent (never partial); if the second rename fails the first is
// undone, and if that fails too the old workspace stays in the staging
// directory, marked so that no prepare removes it (oldKept).
func (s *Staging) Install() error {
	t := s.target
	rename := s.opts.rename
	intoPlace := func(err error) error {
		return stagingErr(ioFailed, err, "the output was not changed; check the output directory and re-run prepare",
			"cannot move the staged workspace into place at %s: %v", t.named(t.Path), err)
	}
	if st, err := s.dir.Lstat(newName); err != nil || dirfd.IDOf(&st) != s.root.ID() {
		return stagingErr(ioFailed, dirfd.ErrChanged, "re-run prepare", "the staged workspace in %s was replaced while prepare ran; nothing was replaced", s.target.named(s.path))
	}
	if t.out == nil {
		err := rename(s.dir, newName, s.parent, t.base, unix.RENAME_NOREPLACE)
		if dirfd.Unsupported(err) {
			err = rename(s.dir, newName, s.parent, t.base, 0)
		}
		if err != nil {
			return intoPlace(err)
		}
		s.installed = true
		return s.syncParent()
	}
	st, err := s.parent.Lstat(t.base)
	if err != nil || dirfd.IDOf(&st) != t.out.ID() {
		return stagingErr(ioFailed, dirfd.ErrChanged, "check who else writes there and re-run prepare",
			"output %s was replaced by another directory while prepare ran; nothing was replaced", t.named(t.Path))
	}
	err = rename(s.dir, newName, s.parent, t.base, unix.RENAME_EXCHANGE)
	if err == nil {
		s.installed, s.old = true, newName
		return s.syncParent()
	}
	if !dirfd.Unsupported(err) {
		return intoPlace(err)
	}
	if err := rename(s.parent, t.base, s.dir, asideName, 0); err != nil {
		return stagingErr(ioFailed, err, "the output was not changed; check the output directory and re-run prepare",
			"cannot move the old workspace %s aside: %v", t.named(t.Path), err)
	}
	if err := rename(s.dir, newName, s.parent, t.base, 0); err != nil {
		if undo := rename(s.dir, asideName, s.parent, t.base, 0); undo != nil {
			// The old tree stays aside: the only copy of the old workspace.
			s.keep = true
			old := filepath.Join(s.path, asideName)
			msg := fmt.Sprintf("cannot move the staged workspace into place at %s: %v; the old workspace could not be put back (%v) and is now at %s", t.named(t.Path), err, undo, t.named(old))
			if merr := s.markKept(asideName); merr != nil {
				msg += fmt.Sprintf(" (marking it failed: %v)", merr)
			}
			return &Error{Kind: oldKept, Err: err, Message: msg,
				Hint: fmt.Sprintf("move it back with: mv %s %s (prepare never deletes it)", shell.Quote(t.named(old)), shell.Quote(t.named(t.Path)))}
		}
		return intoPlace(err)
	}
	s.installed, s.old = true, asideName
	return s.syncParent()
}

func (s *Staging) syncParent() error {
	if err := s.opts.syncDirs(s.parent); err != nil {
		return stagingErr(notDurable, err, "check the filesystem; re-run prepare to be sure the workspace is durable",
			"the new workspace is in place at %s, but flushing the directory failed: %v", s.target.named(s.target.Path), err)
	}
	return nil
}

func syncDirs(ds ...*dirfd.Dir) error {
	for _, d := range ds {
		if err := d.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the staging directory with whatever it holds (the new
// tree of a prepare that did not install it, or the old workspace after a
// swap), unless it holds the only copy of the old workspace. A prepare
// that did not install also removes the parents of the output that Stage
// created (deepest first, while empty). The old workspace is removed only
// when it is still the directory Open checked; anything else is
// left, with an error naming the staging directory. Close releases the
// staging lock last.
func (s *Staging) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.dir != nil && !s.keep {
		if s.old != "" {
			want := s.target.out.ID()
			if rerr := s.opts.remove(s.dir, s.old, &want); errors.Is(rerr, dirfd.ErrChanged) {
				// Not the directory that was checked: someone swapped
				// the output in the instant before the exchange. It is
				// not ours to delete.
				s.keep = true
				err = fmt.Errorf("the directory swapped out of %s is not the workspace prepare checked; it was left at %s: %w",
					s.target.named(s.target.Path), s.target.named(filepath.Join(s.path, s.old)), rerr)
				if merr := s.markKept(s.old); merr != nil {
					err = fmt.Errorf("%w (marking it failed: %v)", err, merr)
				}
			} else if rerr != nil {
				err = fmt.Errorf("the old workspace could not be removed from %s: %w", s.target.named(s.path), rerr)
			}
		}
		if err == nil && !s.keep {
			id := s.dir.ID()
			if rerr := s.opts.remove(s.parent, s.name, &id); rerr != nil {
				err = fmt.Errorf("the staging directory %s could not be removed: %w", s.target.named(s.path), rerr)
			}
		}
	}
	if !s.installed {
		for i := len(s.created) - 1; i >= 0; i-- {
			c := s.created[i]
			if st, lerr := c.parent.Lstat(c.name); lerr != nil || dirfd.IDOf(&st) != c.dir.ID() || unix.Unlinkat(c.parent.Fd(), c.name, unix.AT_REMOVEDIR) != nil {
				break
			}
		}
	}
	s.root.Close()
	for _, c := range s.created {
		c.dir.Close() // the last one is s.parent
	}
	s.dir.Close()
	return err
}
