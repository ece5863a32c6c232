package prepare

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/swap"
)

// JobArtifacts lists the job directories under OUT/.nvflare_slurm/jobs/
// (sorted). A missing workspace or jobs directory has none.
func JobArtifacts(output string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(output, filepath.FromSlash(jobsDir)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// Write materialises w at w.Output.
//
//  1. Abandoned staging directories of earlier, killed prepares of this
//     output are removed (see cleanStale).
//  2. The workspace is built in a fresh sibling staging directory
//     OUT/../.<base>.prepare-<owner>-<random> (0700, same filesystem), every
//     file created with O_CREAT|O_EXCL|O_NOFOLLOW.
//  3. One syncfs(2) makes all of it durable, then the directories involved
//     in the swap are fsynced.
//  4. The staged tree is swapped into place (swap.Install: renameat2
//     RENAME_EXCHANGE, or RENAME_NOREPLACE for a new output).
//  5. The old tree, now inside the staging directory, is removed with it.
//
// Any failure or a cancelled ctx before step 4 removes the staging
// directory and leaves OUT as it was.
func Write(ctx context.Context, w *Workspace) (err error) {
	parent := filepath.Dir(w.Output)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return &Error{Code: CodeInvalidOutput, Message: fmt.Sprintf("cannot create the output's parent directory %s: %v", parent, err),
			Hint: "check the path and its permissions", Err: err}
	}
	w.cleanStale()
	stage, err := newStagingDir(w.Output)
	if err != nil {
		return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot create a staging directory beside %s: %v", w.Output, err),
			Hint: "the output's parent directory must be writable", Err: err}
	}
	keepStage := false
	defer func() {
		if keepStage {
			return
		}
		if rmErr := removeTree(stage); rmErr != nil && err == nil {
			w.warnf("could not remove the staging directory %s: %v", stage, rmErr)
		}
	}()
	root := filepath.Join(stage, "new")
	if err := w.materialise(ctx, root); err != nil {
		if ctx.Err() != nil {
			return &Error{Code: CodeInterrupted, Message: fmt.Sprintf("prepare of %s interrupted; the output was not changed", w.Output),
				Hint: "re-run prepare", Err: err}
		}
		return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot stage the workspace for %s: %v", w.Output, err),
			Hint: "the output was not changed; fix the cause and re-run prepare", Err: err}
	}
	if err := syncfs(stage); err != nil {
		return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot flush the staged workspace to disk: %v", err), Hint: "check the filesystem", Err: err}
	}
	if ctx.Err() != nil {
		return &Error{Code: CodeInterrupted, Message: fmt.Sprintf("prepare of %s interrupted; the output was not changed", w.Output), Hint: "re-run prepare", Err: ctx.Err()}
	}
	// syncfs made the staged tree and its directory entries durable; the
	// swap fsyncs the directories whose entries it changes.
	old, swapped, err := swap.Install(root, w.Output, filepath.Join(stage, "old"))
	switch {
	case err == nil:
		// The old tree is inside stage now; the deferred removal drops it.
		return nil
	case swapped:
		return &Error{Code: CodeFailed, Message: fmt.Sprintf("the new workspace is in place at %s, but flushing the directory failed: %v", w.Output, err),
			Hint: "check the filesystem; re-run prepare to be sure the workspace is durable", Err: err}
	case old != "":
		// The two-rename fallback could not put the old tree back: keep it.
		keepStage = true
		return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot move the staged workspace into place at %s: %v", w.Output, err),
			Hint: fmt.Sprintf("the old workspace is at %s: move it back to %s", old, w.Output), Err: err}
	}
	return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot move the staged workspace into place at %s: %v", w.Output, err),
		Hint: "the output was not changed; check the output directory and re-run prepare", Err: err}
}

// materialise writes every file of w under root, which must not exist:
// directories first (in order, writable), then the files by a few workers
// in parallel (file creation is mostly kernel time, and distinct
// directories do not contend), then the directories' own modes, deepest
// first.
func (w *Workspace) materialise(ctx context.Context, root string) error {
	var dirs, files []*File
	for _, f := range w.Files {
		if f.Dir {
			dirs = append(dirs, f)
		} else {
			files = append(files, f)
		}
	}
	for _, d := range dirs {
		if err := fsx.MkdirExclusive(filepath.Join(root, filepath.FromSlash(d.Path)), 0o700); err != nil {
			return err
		}
	}
	// Work is handed out a directory at a time: creating entries in one
	// directory serialises on its lock, so workers in distinct directories
	// do not wait for each other.
	var groups [][]*File
	for i, f := range files {
		if i == 0 || path.Dir(f.Path) != path.Dir(files[i-1].Path) {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], f)
	}
	mask := umask()
	if err := parallel(ctx, len(groups), len(files), func(i int) error {
		for _, f := range groups[i] {
			if err := ctx.Err(); err != nil {
				return err
			}
			target := filepath.Join(root, filepath.FromSlash(f.Path))
			var err error
			if f.rendered {
				err = fsx.WriteExclusive(target, f.Data, f.Mode, false)
			} else {
				err = copyExclusive(f.Source, target, f, mask)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(filepath.Join(root, filepath.FromSlash(dirs[i].Path)), dirs[i].Mode); err != nil {
			return err
		}
	}
	return nil
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
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
	return firstErr
}

// copyExclusive copies src to a new file dst (O_CREAT|O_EXCL|O_NOFOLLOW)
// with f's exact mode and modification time, with raw system calls:
// copy_file_range moves the data inside the kernel (read/write where it
// cannot), and fchmod runs only when the umask (mask) narrowed the mode.
func copyExclusive(src, dst string, f *File, mask fs.FileMode) (err error) {
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(in)
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(f.Mode))
	if err != nil {
		return &os.PathError{Op: "create", Path: dst, Err: err}
	}
	defer func() {
		if cerr := unix.Close(out); cerr != nil && err == nil {
			err = &os.PathError{Op: "close", Path: dst, Err: cerr}
		}
	}()
	if f.Mode&^mask != f.Mode {
		if err := unix.Fchmod(out, uint32(f.Mode)); err != nil {
			return &os.PathError{Op: "chmod", Path: dst, Err: err}
		}
	}
	if err := copyData(in, out); err != nil {
		return &os.PathError{Op: "copy", Path: src, Err: err}
	}
	if !f.ModTime.IsZero() {
		ts := unix.NsecToTimespec(f.ModTime.UnixNano())
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "utimes", Path: dst, Err: err}
		}
	}
	return nil
}

// copyData copies in to out until EOF.
func copyData(in, out int) error {
	for {
		n, err := unix.CopyFileRange(in, nil, out, nil, 1<<30, 0)
		if err == nil && n == 0 {
			return nil
		}
		if err == nil {
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			return readWrite(in, out)
		}
		return err
	}
}

func readWrite(in, out int) error {
	buf := make([]byte, 256<<10)
	for {
		n, err := unix.Read(in, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
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
}

// umask returns the process umask, read from /proc/self/status (reading it
// with umask(2) would have to change it, racing with other threads); 0o777
// (always fchmod) when unknown.
func umask() fs.FileMode {
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

// syncfs flushes the filesystem holding dir: one call for every staged
// file instead of one fsync each (contract §13).
func syncfs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

// workerLimit caps the workers of parallel.
var workerLimit = 8
