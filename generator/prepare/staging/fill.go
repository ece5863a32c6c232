package staging

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
)

// File is one entry of the tree Fill writes.
type File struct {
	Path string      // slash-separated, relative to the workspace root ("." is the root)
	Dir  bool        // a directory
	Mode fs.FileMode // permission bits, set exactly (the umask does not apply)
	// Data is the content of a file that has no Source.
	Data []byte
	// Source is the file to copy (a kit file, or a file kept from the
	// workspace's local/), opened with dirfd.OpenRegular: it must still
	// be the regular file Expect describes (the one scanned), and no more
	// than Expect.Size bytes of it are copied (none when it is 0).
	Source string
	Expect dirfd.Expect
	// ModTime, when set, is given to the file.
	ModTime time.Time
}

// Fill writes files below the staging directory: directories first (in
// path order, each verified to be the one just made), then the files by a
// few workers in parallel, one directory at a time each (file creation is
// mostly kernel time, and distinct directories do not contend), every
// file created with O_CREAT|O_EXCL|O_NOFOLLOW relative to its directory's
// descriptor, then the directories' own modes, deepest first. A cancelled
// ctx stops it between files.
func (s *Staging) Fill(ctx context.Context, files []*File) error {
	var dirs, regular []*File
	for _, f := range files {
		switch {
		case f.Path == ".":
		case f.Dir:
			dirs = append(dirs, f)
		default:
			regular = append(regular, f)
		}
	}
	slices.SortFunc(dirs, func(a, b *File) int { return ComparePaths(a.Path, b.Path) })
	slices.SortStableFunc(regular, func(a, b *File) int { return ComparePaths(path.Dir(a.Path), path.Dir(b.Path)) })
	if err := s.mkdirs(dirs); err != nil {
		return err
	}
	// Work is handed out a directory at a time: creating entries in one
	// directory serialises on its lock, so workers in distinct
	// directories do not wait for each other.
	var groups [][]*File
	for i, f := range regular {
		if i == 0 || path.Dir(f.Path) != path.Dir(regular[i-1].Path) {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], f)
	}
	// A few workers, sized by the number of files: small trees are not
	// worth the threads (each worker blocked in a system call holds an OS
	// thread). After an error or a cancelled ctx no new directory starts.
	mask := processUmask()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, min(len(groups), len(regular)/8+1, 2*runtime.GOMAXPROCS(0), 8)))
	for _, group := range groups {
		g.Go(func() error { return s.fillDir(gctx, group, mask) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d, err := s.openStaged(dirs[i].Path)
		if err != nil {
			return err
		}
		err = d.Chmod(dirs[i].Mode)
		d.Close()
		if err != nil {
			return err
		}
	}
	for _, f := range files {
		if f.Path == "." {
			return s.root.Chmod(f.Mode)
		}
	}
	return nil
}

// mkdirs creates dirs (sorted, parents first) below the root, 0700 while
// the tree is filled, and records the identity of each.
func (s *Staging) mkdirs(dirs []*File) error {
	type open struct {
		rel string
		d   *dirfd.Dir
	}
	stack := []open{{".", s.root}}
	defer func() {
		for _, o := range stack[1:] {
			o.d.Close()
		}
	}()
	for _, f := range dirs {
		parent := path.Dir(f.Path)
		for len(stack) > 1 && stack[len(stack)-1].rel != parent {
			stack[len(stack)-1].d.Close()
			stack = stack[:len(stack)-1]
		}
		top := stack[len(stack)-1]
		if top.rel != parent {
			return fmt.Errorf("internal error: directory %s listed before its parent", f.Path)
		}
		d, err := top.d.Mkdir(path.Base(f.Path), 0o700, false)
		if err != nil {
			return err
		}
		s.dirs[f.Path] = d.ID()
		stack = append(stack, open{f.Path, d})
	}
	return nil
}

// openStaged opens the staged directory rel and checks that it is the one
// mkdirs made.
func (s *Staging) openStaged(rel string) (*dirfd.Dir, error) {
	want, ok := s.dirs[rel]
	if !ok {
		return nil, fmt.Errorf("internal error: directory %s of %s was not created", rel, s.target.named(s.path))
	}
	d, err := s.root.OpenBeneath(rel)
	if err != nil {
		return nil, err
	}
	if d.ID() != want {
		d.Close()
		return nil, &os.PathError{Op: "open", Path: d.Path(), Err: dirfd.ErrChanged}
	}
	return d, nil
}

// fillDir writes the files of one directory (group, all in the same
// directory), checking ctx before each.
func (s *Staging) fillDir(ctx context.Context, group []*File, mask fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := s.openStaged(path.Dir(group[0].Path))
	if err != nil {
		return err
	}
	defer d.Close()
	for _, f := range group {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeFile(d, f, mask); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates f in d: its Data, or a copy of its Source (io.Copy:
// copy_file_range where it can), with f's exact mode and modification
// time. No more than the size the scan saw is copied: a file that grew
// since, or a file that reports one size and holds more (/proc), is cut
// there, and a size of 0 copies nothing.
func writeFile(d *dirfd.Dir, f *File, mask fs.FileMode) (err error) {
	var in *os.File
	if f.Source != "" {
		if in, err = dirfd.OpenRegular(f.Source, f.Expect); err != nil {
			return err
		}
		defer in.Close()
	}
	out, err := d.Create(path.Base(f.Path), f.Mode, mask)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if in == nil {
		if _, err := out.Write(f.Data); err != nil {
			return err
		}
	} else if _, err := io.Copy(out, io.LimitReader(in, f.Expect.Size)); err != nil {
		return &os.PathError{Op: "copy", Path: f.Source, Err: err}
	}
	if !f.ModTime.IsZero() {
		ts := unix.NsecToTimespec(f.ModTime.UnixNano())
		if err := unix.UtimesNanoAt(int(out.Fd()), "", []unix.Timespec{ts, ts}, unix.AT_EMPTY_PATH); err != nil {
			return &os.PathError{Op: "utimes", Path: out.Name(), Err: err}
		}
	}
	return nil
}

// processUmask returns the process umask, read from /proc/self/status
// (reading it with umask(2) would have to change it, racing with other
// threads); 0o777 (always fchmod) when unknown.
func processUmask() fs.FileMode {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		_, v, _ := strings.Cut(string(data), "\nUmask:") // never the first line (Name: is)
		v, _, _ = strings.Cut(v, "\n")
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
			return fs.FileMode(n)
		}
	}
	return 0o777
}

// ComparePaths orders slash paths so that a directory comes right before
// its contents: "." first, then component by component (the order Fill
// creates directories in).
func ComparePaths(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == ".":
		return -1
	case b == ".":
		return 1
	}
	return strings.Compare(strings.ReplaceAll(a, "/", "\x00"), strings.ReplaceAll(b, "/", "\x00"))
}
