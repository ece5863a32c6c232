package dirfd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Expect is what a file must still be when it is opened for reading: the
// file a scan saw (its device and inode) with the size the scan saw. A
// zero Expect checks nothing beyond the type.
type Expect struct {
	ID   FileID
	Size int64
}

// ExpectOf is the Expect of a stat result.
func ExpectOf(st *unix.Stat_t) Expect { return Expect{ID: IDOf(st), Size: st.Size} }

// NotRegularError says that a path that was to be read as a regular file
// is something else now: Mode holds its type.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (type %v)", e.Path, e.Mode.Type())
}

// ChangedError says that a file is not the one that was scanned (another
// inode, or another size).
type ChangedError struct {
	Path       string
	Want, Have Expect
}

func (e *ChangedError) Error() string {
	if e.Want.ID != e.Have.ID {
		return fmt.Sprintf("%s was replaced by another file after it was scanned", e.Path)
	}
	return fmt.Sprintf("%s changed size after it was scanned (%d bytes, now %d)", e.Path, e.Want.Size, e.Have.Size)
}

// OpenRegular opens path for reading as a regular file without ever
// blocking or following a symlink in its last component: open with
// O_NOFOLLOW|O_NONBLOCK (a named pipe opens at once instead of waiting for
// a writer), then fstat the descriptor and refuse anything but a regular
// file (*NotRegularError; a symlink is ErrSymlink) or, with a non-zero
// want, a file other than the one scanned (*ChangedError).
func OpenRegular(path string, want Expect) (*os.File, error) {
	return openRegularAt(unix.AT_FDCWD, path, path, want)
}

// OpenRegular opens the regular file name of d for reading, with the
// checks of the package-level OpenRegular.
func (d *Dir) OpenRegular(name string, want Expect) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	return openRegularAt(d.fd, name, d.Join(name), want)
}

func openRegularAt(dirfd int, name, display string, want Expect) (*os.File, error) {
	fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		var st unix.Stat_t
		if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				return nil, &os.PathError{Op: "open", Path: display, Err: ErrSymlink}
			case unix.S_IFREG:
			default:
				// A socket (ENXIO) or a device without a driver.
				return nil, &NotRegularError{Path: display, Mode: ModeOf(st.Mode)}
			}
		}
		if errors.Is(err, unix.ELOOP) {
			err = ErrSymlink
		}
		return nil, &os.PathError{Op: "open", Path: display, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: display, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &NotRegularError{Path: display, Mode: ModeOf(st.Mode)}
	}
	if have := ExpectOf(&st); want != (Expect{}) && have != want {
		unix.Close(fd)
		return nil, &ChangedError{Path: display, Want: want, Have: have}
	}
	return os.NewFile(uintptr(fd), display), nil
}

// ModeOf turns a stat mode into an fs.FileMode (type and permission bits).
func ModeOf(m uint32) fs.FileMode { return fs.FileMode(m&0o777) | modeTypes[m&unix.S_IFMT] }

// modeTypes are the fs.FileMode type bits of each stat file type (none
// for a regular file).
var modeTypes = map[uint32]fs.FileMode{
	unix.S_IFDIR: fs.ModeDir, unix.S_IFLNK: fs.ModeSymlink, unix.S_IFIFO: fs.ModeNamedPipe, unix.S_IFSOCK: fs.ModeSocket,
	unix.S_IFCHR: fs.ModeDevice | fs.ModeCharDevice, unix.S_IFBLK: fs.ModeDevice,
}
