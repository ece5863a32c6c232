// Package staging is how prepare replaces a workspace without ever
// touching what it does not own.
//
// Everything happens relative to directory descriptors (internal/dirfd):
// the output's parent is opened once, without following any symlink, and
// checked (only its owner, this account or root may write it, unless it
// is sticky); the existing output is opened once and recognised as a
// workspace of this output (see marker.go) or refused; the
// staging directory is created in the parent, opened, verified to be the
// empty directory just made and locked (flock) for as long as the prepare
// runs; the new tree is filled below it through descriptors; one syncfs
// makes it durable; renameat2(RENAME_EXCHANGE) swaps it with the output;
// one fsync of the parent makes the swap durable; and the old tree is
// removed through descriptors, never following a symlink and never
// entering a directory that is not the one listed. No path string inside
// the staging tree or the tree being removed is ever resolved again.
package staging

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/shell"
)

// ErrorKind says what kind of failure an Error is.
type ErrorKind int

// The kinds of Error.
const (
	// ioFailed: an I/O failure; the output is as it was.
	ioFailed ErrorKind = iota
	// UnsafeOutput: the output or its parent is not a place
	// prepare may write (writable by another account, a symlink, not a
	// directory); nothing was touched.
	UnsafeOutput
	// NotWorkspace: the output is a non-empty directory that is
	// not a workspace prepared for it; nothing was touched.
	NotWorkspace
	// notDurable: the new workspace is in place but flushing the
	// parent directory failed.
	notDurable
	// oldKept: the swap failed and the old workspace could not be
	// put back; it is kept in the staging directory.
	oldKept
)

// Error is every failure of the staging code: a message saying
// what failed and where, and a hint saying what to do.
type Error struct {
	Kind    ErrorKind
	Message string
	Hint    string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

func stagingErr(kind ErrorKind, err error, hint, format string, args ...any) *Error {
	return &Error{Kind: kind, Err: err, Hint: hint, Message: fmt.Sprintf(format, args...)}
}

// State says what is at the output path when it is opened.
type State int

// The states of an output.
const (
	// outputAbsent: nothing at the output path.
	outputAbsent State = iota
	// outputEmpty: an empty directory.
	outputEmpty
	// outputWorkspace: a workspace prepared for this output (its marker
	// names it).
	outputWorkspace
	// OutputOther: a non-empty directory that is not a workspace of this
	// output; Reason says why.
	OutputOther
)

// Target is the output of one prepare, opened: its parent (or, when
// the parent does not exist yet, the nearest existing ancestor) and the
// existing output directory, each through a descriptor checked once.
type Target struct {
	Path   string // the output: absolute and clean
	State  State
	Reason string // for OutputOther: why it is not a workspace of Path

	named    func(string) string // names a path as the user gave it, for messages
	base     string
	ancestor *dirfd.Dir // the parent, or its nearest existing ancestor
	missing  []string   // the directories to create below ancestor to reach the parent
	out      *dirfd.Dir // the existing output directory (nil when absent)
}

// Open opens the output at path (absolute) for a prepare and
// classifies what is there. It refuses, touching nothing:
//   - a parent (or, for a parent to create, the ancestor it goes in)
//     that another account may write: owned by an account other than
//     this one or root, or writable by its group or others without the
//     sticky bit;
//   - any symlink on the way to the parent, or an output that is a
//     symlink or not a directory.
func Open(path string, name func(string) string) (*Target, error) {
	if name == nil {
		name = func(p string) string { return p }
	}
	t := &Target{Path: path, base: filepath.Base(path), named: name}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || filepath.Dir(path) == path {
		return nil, stagingErr(UnsafeOutput, nil, "give an absolute path below /", "output %s is not a clean absolute path below /", t.named(path))
	}
	dir := filepath.Dir(path)
	for {
		d, err := dirfd.Open(dir)
		if err == nil {
			t.ancestor = d
			break
		}
		if errors.Is(err, dirfd.ErrSymlink) {
			return nil, stagingErr(UnsafeOutput, err, "give the output by its real path (without symlinks), or re-run prepare",
				"a directory on the way to output %s is a symlink (it was resolved before; it changed while prepare ran)", t.named(path))
		}
		if !errors.Is(err, unix.ENOENT) || filepath.Dir(dir) == dir {
			return nil, stagingErr(UnsafeOutput, err, "check the path and its permissions", "cannot open the output's parent directory: %v", err)
		}
		t.missing = append([]string{filepath.Base(dir)}, t.missing...)
		dir = filepath.Dir(dir)
	}
	if err := checkWriters(t.ancestor, t.named(t.ancestor.Path()), len(t.missing) > 0); err != nil {
		t.Close()
		return nil, err
	}
	if len(t.missing) > 0 {
		return t, nil // outputAbsent
	}
	if err := t.openOutput(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// openOutput opens and classifies an existing output.
func (t *Target) openOutput() error {
	st, err := t.ancestor.Lstat(t.base)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return stagingErr(UnsafeOutput, err, "check the permissions of the output path", "cannot inspect output %s: %v", t.named(t.Path), err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return stagingErr(UnsafeOutput, nil, "give the directory the symlink points to as --output, or remove the symlink",
			"output %s is a symlink; prepare replaces directories only", t.named(t.Path))
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return stagingErr(UnsafeOutput, nil, "choose a directory path for --output", "output %s exists and is not a directory", t.named(t.Path))
	}
	out, err := t.ancestor.OpenDir(t.base)
	if err == nil && out.ID() != dirfd.IDOf(&st) {
		out.Close()
		err = dirfd.ErrChanged
	}
	if err != nil {
		return stagingErr(UnsafeOutput, err, "check the output path and its permissions", "cannot open output %s: %v", t.named(t.Path), err)
	}
	t.out = out
	names, err := out.Names()
	if err != nil {
		return stagingErr(ioFailed, err, "check the permissions of the existing workspace", "cannot list output %s: %v", t.named(t.Path), err)
	}
	if len(names) == 0 {
		t.State = outputEmpty
		return nil
	}
	if t.Reason = markerReason(out, t.Path); t.Reason == "" {
		t.State = outputWorkspace
	} else {
		t.State = OutputOther
	}
	return nil
}

// CheckReplace refuses, unless force, to replace an output that is not a
// workspace prepared for it (NotWorkspace). An absent or empty
// output and a workspace of this output are always fine.
func (t *Target) CheckReplace(force bool) error {
	if t.State != OutputOther || force {
		return nil
	}
	return stagingErr(NotWorkspace, nil,
		fmt.Sprintf("prepare replaces the whole directory: choose a new or empty directory for --output, or re-run with --force to replace %s and everything in it", shell.Quote(t.named(t.Path))),
		"output %s is not a workspace prepared for this path (%s)", t.named(t.Path), t.Reason)
}

// List returns the names in the directory at the slash path rel below the
// existing output (nil when the output, or rel, does not exist or is not a
// directory). It never follows a symlink.
func (t *Target) List(rel string) ([]string, error) {
	if t.out == nil {
		return nil, nil
	}
	d, err := t.out.OpenBeneath(rel)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Names()
}

// Close releases the descriptors of t.
func (t *Target) Close() {
	t.out.Close()
	t.ancestor.Close()
}

// checkWriters refuses a directory that an account other than this one
// (or root) may write: one it does not own, or one writable by its group
// or others without the sticky bit (which keeps others from renaming or
// removing what prepare creates in it). creating says whether the output's
// parent is yet to be created inside d.
func checkWriters(d *dirfd.Dir, dir string, creating bool) error {
	st := d.Stat()
	euid := os.Geteuid()
	what := "the output's parent directory"
	if creating {
		what = "the directory prepare would create the output's parent in,"
	}
	fix := fmt.Sprintf("choose an output in a directory only you can write, or (as its owner) run 'chmod g-w,o-w %s', or 'chmod +t %s' if others must create files in it",
		shell.Quote(dir), shell.Quote(dir))
	if owner := int(st.Uid); owner != euid && owner != 0 {
		return stagingErr(UnsafeOutput, nil,
			fmt.Sprintf("run prepare as %s, or choose an output in a directory you own", accountName(owner)),
			"%s %s belongs to %s, not to %s who runs prepare: that account could swap prepare's staging directory for a symlink; nothing was written",
			what, dir, accountName(owner), accountName(euid))
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		who := map[uint32]string{0o020: "its group", 0o002: "every account", 0o022: "its group and every account"}[st.Mode&0o022]
		return stagingErr(UnsafeOutput, nil, fix,
			"%s %s is writable by %s (mode %04o) and not sticky: another account could swap prepare's staging directory for a symlink; nothing was written",
			what, dir, who, st.Mode&0o7777)
	}
	return nil
}

// accountName is "name (uid N)", or "uid N" when the name is unknown.
func accountName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return "uid " + strconv.Itoa(uid)
}
