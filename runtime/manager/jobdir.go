package manager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/fsx"
)

// Files of the control area (contract §8 plus this runtime's own).
const (
	controlDir   = schema.ControlDir
	jobsDirName  = schema.JobsDir
	handleFile   = schema.HandleFile
	timersFile   = schema.TimersFile
	lockFile     = "observe.lock"
	cacheFile    = "observations.json"
	handleFormat = 1
)

// HandleInfo is the persisted handle of one submitted job (handle.json,
// mode 0600): what a restarted parent or another CLI process needs to find
// and check the job.
type HandleInfo struct {
	Format         int       `json:"format"`
	JobID          string    `json:"job_id"`
	SlurmJobID     string    `json:"slurm_job_id"`
	JobName        string    `json:"job_name"`
	Marker         string    `json:"marker"`
	SubmitTime     time.Time `json:"submit_time"`
	PendingTimeout float64   `json:"pending_timeout"` // seconds, the job's effective value
}

// writeHandle records h as dir's handle.json, atomically and exclusively:
// the content goes to a temp file in dir (".handle.json.tmp-<random>",
// 0600, fsynced when sync is true), which is then published under
// handle.json without ever replacing an existing one (fsx.Publish:
// renameat2 RENAME_NOREPLACE, or link(2) where the filesystem lacks it),
// and dir is fsynced; staged, when not nil, runs between the two (a test
// hook: where a crash leaves only the temp file). A reader thus sees no handle.json or a complete one,
// never a partial one. A crash before the publish leaves only the temp
// file, which every reader ignores: the dir is one without a handle (gc's
// rules for those apply) and its removal takes the temp file with it.
func writeHandle(dir string, h HandleInfo, sync bool, staged func(tmp string)) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, handleFile)
	tmp, err := fsx.WriteTemp(path, append(data, '\n'), 0o600, sync)
	if err != nil {
		return err
	}
	if staged != nil {
		staged(tmp)
	}
	if err := fsx.Publish(tmp, path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	return fsx.SyncDir(dir)
}

// errNoHandle: the job dir exists without handle.json (a launch in
// progress, or one that crashed between creating its artifacts and
// recording the submission).
var errNoHandle = errors.New("no handle.json")

func readHandle(dir string) (HandleInfo, error) {
	var h HandleInfo
	data, err := readNoFollow(filepath.Join(dir, handleFile), maxControlFile)
	if errors.Is(err, fs.ErrNotExist) {
		return h, errNoHandle
	}
	if err != nil {
		return h, err
	}
	return parseHandle(filepath.Join(dir, handleFile), data)
}

// parseHandle decodes the content of a handle.json read from path and
// checks that it is a complete handle of this format.
func parseHandle(path string, data []byte) (HandleInfo, error) {
	var h HandleInfo
	if err := json.Unmarshal(data, &h); err != nil {
		return h, fmt.Errorf("%s: %v", path, err)
	}
	if h.Format != handleFormat || h.JobID == "" || !scheduler.IsJobID(h.SlurmJobID) || h.JobName == "" || h.Marker == "" || h.SubmitTime.IsZero() {
		return h, fmt.Errorf("%s: not a valid handle (format %d)", path, h.Format)
	}
	return h, nil
}

// jobTimers are the per-job clocks of contract §9 kept in the job dir, so that
// every process watching the workspace shares them (timers.json).
type jobTimers struct {
	PendingSince    time.Time `json:"pending_since,omitzero"`
	Misses          int       `json:"accounting_misses,omitempty"`
	LastMiss        time.Time `json:"last_miss,omitzero"`
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	UserAbort       bool      `json:"user_abort,omitempty"`
}

func readTimers(dir string) (jobTimers, error) {
	var t jobTimers
	data, err := readNoFollow(filepath.Join(dir, timersFile), maxControlFile)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("%s: %v", filepath.Join(dir, timersFile), err)
	}
	return t, nil
}

func writeTimers(dir string, t jobTimers) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return renameio.WriteFile(filepath.Join(dir, timersFile), append(data, '\n'), 0o600)
}

// maxControlFile is the most a handle or timers file may hold.
const maxControlFile = 1 << 20

// readNoFollow reads a regular file without following a symlink or
// blocking on a FIFO put in its place (dirfd.OpenRegular). A limit above
// zero caps its size.
func readNoFollow(path string, limit int64) ([]byte, error) {
	f, err := dirfd.OpenRegular(path, dirfd.Expect{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, limit)
}

// readAll reads the regular file f; a limit above zero caps its size.
func readAll(f *os.File, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && st.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", f.Name(), limit)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && st.Size() > 0 {
		return nil, err
	}
	return data, nil
}

// removeJobDir deletes a job dir, first making any read-only directory a
// container left under sandbox_root writable again.
func removeJobDir(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	err := os.RemoveAll(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
