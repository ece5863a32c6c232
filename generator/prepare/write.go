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
	"github.com/flare-slurm/flare-slurm/internal/shell"
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

// serverStores are the directories inside the workspace where prepare
// puts a server's job store and snapshots (contract §4.4).
var serverStores = []string{"jobs-storage", "snapshot-storage"}

// StoredServerData lists the entries of the server job store and snapshot
// storage inside the workspace at output ("jobs-storage/<name>", sorted):
// replacing the workspace would discard those stored jobs. Missing or
// empty stores have none.
func StoredServerData(output string) ([]string, error) {
	var out []string
	for _, store := range serverStores {
		entries, err := os.ReadDir(filepath.Join(output, store))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, store+"/"+e.Name())
		}
	}
	return out, nil
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
	created, err := mkdirParents(parent)
	defer func() {
		// A prepare that did not install the workspace leaves no trace:
		// the parent directories it created go too (deepest first; only
		// while empty).
		if err != nil && !errors.Is(err, errSwapped) {
			for i := len(created) - 1; i >= 0; i-- {
				if unix.Rmdir(created[i]) != nil {
					break
				}
			}
		}
	}()
	if err != nil {
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
		rmErr := removeStage(stage)
		var pe *Error
		switch {
		case rmErr == nil:
		case err == nil:
			w.warnf("could not remove the staging directory %s: %v; remove it by hand (the next prepare of %s retries)", stage, rmErr, w.Output)
		case errors.As(err, &pe):
			pe.Message += fmt.Sprintf("; the staging directory %s could not be removed either: %v", stage, rmErr)
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
	old, swapped, err := install(root, w.Output, filepath.Join(stage, asideName))
	switch {
	case err == nil:
		// The old tree is inside stage now; the deferred removal drops it.
		return nil
	case swapped:
		return &Error{Code: CodeFailed, Message: fmt.Sprintf("the new workspace is in place at %s, but flushing the directory failed: %v", w.Output, err),
			Hint: "check the filesystem; re-run prepare to be sure the workspace is durable", Err: errors.Join(errSwapped, err)}
	case old != "":
		// The two-rename fallback could not put the old tree back: it is
		// the only copy of the old workspace. Keep the staging directory
		// and mark it so that no later prepare removes it (cleanStale).
		keepStage = true
		msg := fmt.Sprintf("cannot move the staged workspace into place at %s: %v; the old workspace could not be put back and is now at %s", w.Output, err, old)
		if merr := markKept(stage, old, w.Output); merr != nil {
			msg += fmt.Sprintf(" (marking it failed: %v)", merr)
		}
		return &Error{Code: CodeFailed, Message: msg,
			Hint: fmt.Sprintf("move it back with: mv %s %s (prepare never deletes it)", shell.Quote(old), shell.Quote(w.Output)), Err: err}
	}
	return &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot move the staged workspace into place at %s: %v", w.Output, err),
		Hint: "the output was not changed; check the output directory and re-run prepare", Err: err}
}

// errSwapped marks an error that came after the new workspace was
// installed (its parents are in use then).
var errSwapped = errors.New("the workspace was installed")

// mkdirParents creates dir and its missing parents (0755) and returns the
// directories it created, outermost first.
func mkdirParents(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return created, err
		} else if err == nil {
			created = append(created, missing[i])
		}
	}
	// An existing non-directory (or a symlink to one) in the path.
	if st, err := os.Stat(dir); err != nil {
		return created, err
	} else if !st.IsDir() {
		return created, &os.PathError{Op: "mkdir", Path: dir, Err: unix.ENOTDIR}
	}
	return created, nil
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

// install is swap.Install and removeStage removeTree; tests replace them
// to make the swap or the clean-up fail.
var (
	install     = swap.Install
	removeStage = removeTree
)

// workerLimit caps the workers of parallel.
var workerLimit = 8
