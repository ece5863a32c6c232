// Package joblog reads a job's Slurm output, WS/<job_id>/slurm-<id>.out
// (sbatch --output of every job the compiler writes), for `flare-slurm
// logs`: once, or following it as it grows until the job ends.
//
// The file is reached through directory descriptors: the workspace, then
// the run directory, then the file, each opened without following a
// symlink (internal/dirfd, O_NOFOLLOW), never looked up again by path, and
// the file must be a regular file owned by the runtime account. A symlink
// or a file placed there by another account is refused, however --follow
// reopens it.
package joblog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/schema"
)

// ErrNotYet says that the output file does not exist (yet): Slurm creates
// it when the job starts.
var ErrNotYet = errors.New("the job's Slurm output does not exist (yet)")

// Path is where the job's Slurm output is, for messages.
func Path(root, jobID, slurmJobID string) string {
	return filepath.Join(root, jobID, schema.SlurmOutputName(slurmJobID))
}

// Open opens the Slurm output of Slurm job slurmJobID of job jobID in the
// workspace root (a real path), as the account uid: ErrNotYet when the run
// directory or the file does not exist.
func Open(root, jobID, slurmJobID string, uid int) (*os.File, error) {
	name := schema.SlurmOutputName(slurmJobID)
	ws, err := dirfd.Open(root)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	run, err := ws.OpenDir(jobID)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotYet
	}
	if err != nil {
		return nil, fmt.Errorf("run directory %s: %w", filepath.Join(root, jobID), err)
	}
	defer run.Close()
	path := filepath.Join(root, jobID, name)
	f, err := run.OpenRegular(name, dirfd.Expect{})
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, ErrNotYet
	case errors.Is(err, dirfd.ErrSymlink):
		return nil, fmt.Errorf("%s is a symlink: the job's output is never read through one", path)
	case err != nil:
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if int(st.Uid) != uid {
		f.Close()
		return nil, fmt.Errorf("%s is owned by uid %d, not by the runtime account uid %d: not read", path, st.Uid, uid)
	}
	return f, nil
}

// Follow copies the output to w as it grows: what open returns (ErrNotYet
// while the job has not started), then each addition, checking every
// interval, until ended says the job ended (then it copies what is left and
// returns) or ctx ends. A file that shrinks (truncated by hand) is read
// again from its start. ended errors (an unavailable scheduler) are not
// fatal: the job is asked again at the next interval.
func Follow(ctx context.Context, w io.Writer, open func() (*os.File, error), ended func(context.Context) bool, interval time.Duration) error {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var offset int64
	copyNew := func() error {
		if f == nil {
			var err error
			if f, err = open(); errors.Is(err, ErrNotYet) {
				f = nil
				return nil
			} else if err != nil {
				return err
			}
			offset = 0
		}
		if st, err := f.Stat(); err == nil && st.Size() < offset {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			offset = 0
		}
		n, err := io.Copy(w, f)
		offset += n
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := copyNew(); err != nil {
			return err
		}
		if ended(ctx) {
			// What the job wrote before it ended.
			return copyNew()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
