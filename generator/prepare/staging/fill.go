package staging

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
func (s *Staging) Fill(ctx context.Context, files []File) error {
	var dirs, regular []*File
	for i := range files {
		f := &files[i]
		switch {
		case f.Path == ".":
		case f.Dir:
			dirs = append(dirs, f)
		default:
			regular = append(regular, f)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return PathLess(dirs[i].Path, dirs[j].Path) })
	sort.SliceStable(regular, func(i, j int) bool { return PathLess(path.Dir(regular[i].Path), path.Dir(regular[j].Path)) })
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
	mask := processUmask()
	if err := parallel(ctx, len(groups), len(regular), func(i int) error {
		d, err := s.openStaged(path.Dir(groups[i][0].Path))
		if err != nil {
			return err
		}
		defer d.Close()
		for _, f := range groups[i] {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := writeFile(d, f, mask); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
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
		return nil, fmt.Errorf("internal error: directory %s of %s was not created", rel, s.path)
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

// writeFile creates f in d: its Data, or a copy of its Source made with
// copy_file_range (read/write where it cannot), with f's exact mode and
// modification time.
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
	} else if err := copyData(int(in.Fd()), int(out.Fd()), f.Expect.Size); err != nil {
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

// copyData copies in to out until EOF or limit bytes (the size the scan
// saw), whichever comes first: a file that grew since, or a file that
// reports one size and holds more (/proc), is not copied beyond it. A limit
// of 0 copies nothing: a file that was empty when scanned (or a /proc file
// reporting size 0) stays empty, whatever it holds by now.
func copyData(in, out int, limit int64) error {
	left := max(limit, 0)
	for left > 0 {
		n, err := unix.CopyFileRange(in, nil, out, nil, int(min(left, 1<<30)), 0)
		if err == nil && n == 0 {
			return nil
		}
		if err == nil {
			left -= int64(n)
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			return readWrite(in, out, left)
		}
		return err
	}
	return nil
}

func readWrite(in, out int, left int64) error {
	buf := make([]byte, 256<<10)
	for left > 0 {
		n, err := unix.Read(in, buf[:min(int64(len(buf)), left)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		left -= int64(n)
		for b := buf[:n]; len(b) > 0; {
			m, err := unix.Write(out, b)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			b = b[m:]
		}
	}
	return nil
}

// processUmask returns the process umask, read from /proc/self/status
// (reading it with umask(2) would have to change it, racing with other
// threads); 0o777 (always fchmod) when unknown.
func processUmask() fs.FileMode {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return fs.FileMode(n)
			}
		}
	}
	return 0o777
}

// PathLess orders slash paths so that a directory comes right
// before its contents: "." first, then component by component (the order
// Fill creates directories in).
func PathLess(a, b string) bool {
	if a == "." || b == "." {
		return a == "." && b != "."
	}
	return strings.ReplaceAll(a, "/", "\x00") < strings.ReplaceAll(b, "/", "\x00")
}

// parallel runs do(0..n-1) on a few workers and returns the first error;
// after an error or a cancelled ctx no new item starts. weight (the number
// of files behind the n items) sizes the pool: small trees are not worth
// the threads (each worker blocked in a system call holds an OS thread).
func parallel(ctx context.Context, n, weight int, do func(int) error) error {
	workers := max(1, min(n, weight/8+1, 2*runtime.GOMAXPROCS(0), workerLimit))
	var (
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return firstErr != nil }
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed() {
					return
				}
				err := ctx.Err()
				if err == nil {
					err = do(i)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// workerLimit caps the workers of parallel.
const workerLimit = 8
