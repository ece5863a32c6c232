package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Verdicts of gc on one leftover job dir.
const (
	gcFinished = "finished" // the scheduler confirms no allocation is live or pending
	gcLive     = "live"     // the allocation is pending or running
	gcUnknown  = "unknown"  // the scheduler did not give a usable answer
)

// GCEntry is gc's view of one job dir.
type GCEntry struct {
	Dir        string `json:"dir"`
	JobID      string `json:"job_id,omitempty"`
	SlurmJobID string `json:"slurm_job_id,omitempty"`
	Verdict    string `json:"verdict"`
	State      string `json:"state,omitempty"`
	Reason     string `json:"reason"`
	Removed    bool   `json:"removed"`
	// Action is what gc did with the dir: GCRemoved, gcKept, or (a dry
	// run of a finished job's dir) GCWouldRemove; Reason says why.
	Action string `json:"action"`
}

// What gc did with a job dir (GCEntry.Action).
const (
	GCRemoved     = "removed"
	gcKept        = "kept"
	GCWouldRemove = "would_remove"
)

// GC lists the job dirs of the workspace, asks squeue and sacct whether
// each one's allocation is still live or pending and, when remove is true,
// deletes the dirs the scheduler confirms finished. A dir with a handle is
// finished when squeue no longer lists the job and sacct has its terminal
// record; a dir without a handle (a launch that crashed before recording
// the submission) when squeue lists no job of its name. Anything else —
// including an unavailable scheduler — keeps the dir.
func (m *Manager) GC(ctx context.Context, remove bool) ([]GCEntry, error) {
	var out []GCEntry
	err := m.obs.withLock(ctx, func(c *cache) (bool, error) {
		var err error
		out, err = m.gcLocked(ctx, c, remove)
		return remove, err
	})
	for i := range out {
		e := &out[i]
		// A finished job's dir is removed once its result is on disk (after
		// the lock): report what is really gone, not what was planned.
		if e.Removed {
			if _, serr := os.Lstat(e.Dir); serr == nil || !errors.Is(serr, os.ErrNotExist) {
				e.Removed = false
				e.Reason += "; its removal failed (the log says why)"
			}
		}
		switch {
		case e.Removed:
			e.Action = GCRemoved
		case e.Verdict == gcFinished && !remove:
			e.Action = GCWouldRemove
		default:
			e.Action = gcKept
		}
	}
	return out, err
}

// gcLocked is gc's verdict on each job dir, in Dir order (os.ReadDir sorts
// by name); GC says what it did.
func (m *Manager) gcLocked(ctx context.Context, c *cache, remove bool) ([]GCEntry, error) {
	ents, err := os.ReadDir(m.jobsDir)
	if err != nil {
		return nil, fmt.Errorf("list job dirs: %w", err)
	}
	var withHandle []*liveJob
	out := make([]GCEntry, len(ents))
	byDir := map[string]*GCEntry{}
	var nameless []*GCEntry
	for i, e := range ents {
		dir := filepath.Join(m.jobsDir, e.Name())
		ge := &out[i]
		*ge = GCEntry{Dir: dir, Verdict: gcUnknown}
		byDir[dir] = ge
		if !e.IsDir() {
			ge.Reason = "not a directory; remove it by hand"
			continue
		}
		h, err := readHandle(dir)
		switch {
		case err == nil && e.Name() == schema.JobKey(h.JobID):
			ge.JobID, ge.SlurmJobID = h.JobID, h.SlurmJobID
			t, _ := readTimers(dir)
			withHandle = append(withHandle, &liveJob{info: h, dir: dir, onDisk: true, timers: t})
		case errors.Is(err, errNoHandle):
			// A launch in another process writes its artifacts, runs
			// sbatch (up to submit_timeout) and only then its handle: a
			// dir without a handle younger than the submit timeout plus a
			// minute for writing artifacts may be one in progress.
			st, serr := os.Lstat(dir)
			if serr != nil {
				ge.Reason = "cannot inspect: " + serr.Error()
				continue
			}
			if age := m.now().Sub(st.ModTime()); age < m.cfg.Client.Timeouts.Submit+time.Minute {
				ge.Reason = fmt.Sprintf("no handle.json, created %s ago: a launch may be in progress; run gc again later", age.Round(time.Second))
				continue
			}
			nameless = append(nameless, ge)
		case err == nil:
			ge.Reason = "handle.json names a job whose key is not this dir; inspect it by hand"
		default:
			ge.Reason = "unreadable handle.json: " + err.Error()
		}
	}
	m.ask(ctx, withHandle, false, func(j *liveJob, err error, _ bool) {
		byDir[j.dir].Reason = err.Error()
	}, func(j *liveJob, row scheduler.QueueRow) {
		ge := byDir[j.dir]
		ge.Verdict, ge.State, ge.Reason = gcLive, row.State, "in the queue"
	}, func(j *liveJob, rec scheduler.AcctRow, found bool) {
		ge := byDir[j.dir]
		switch {
		case !found:
			ge.Reason = "not in the queue and no accounting record: cannot confirm it finished"
		case !isTerminal(rec.State):
			ge.Verdict, ge.State, ge.Reason = gcLive, rec.State, "accounting shows it live"
		default:
			ge.Verdict, ge.State, ge.Reason = gcFinished, rec.State, "accounting shows it ended"
			if remove {
				rc := returnCode(rec.State, rec.Exit, rec.DerivedExit, j.timers.UserAbort)
				m.obs.finish(c, j, rec.State, rc, "collected by gc", m.now())
				ge.Removed = true
			}
		}
	})
	if len(nameless) > 0 {
		queued, err := m.queuedKeys(ctx)
		for _, ge := range nameless {
			// A temp handle that was never published (the launch crashed
			// while recording it) is no handle: the same rules apply.
			noHandle := "no handle.json"
			if ents, err := os.ReadDir(ge.Dir); err == nil && slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return fsx.IsTempOf(e.Name(), handleFile) }) {
				noHandle = "no handle.json (only an unpublished handle temp file)"
			}
			switch {
			case err != nil:
				ge.Reason = noHandle + "; " + err.Error()
			case queued[filepath.Base(ge.Dir)]:
				ge.Verdict, ge.Reason = gcLive, noHandle+", but a job of this NVFlare job id is in the queue"
			default:
				ge.Verdict, ge.Reason = gcFinished, noHandle+" and no job of this NVFlare job id in the queue"
				if remove {
					if rerr := removeJobDir(ge.Dir); rerr != nil {
						ge.Reason += "; remove failed: " + rerr.Error()
					} else {
						ge.Removed = true
					}
				}
			}
		}
	}
	return out, nil
}

// queuedKeys lists this account's queue and returns the job keys of the
// rows whose comment is an NVFlare marker (nvfl:<job id>[@<workspace>]),
// of any workspace: a dir without a handle is kept while a queued job of
// its key may be its own (keeping is the safe side).
func (m *Manager) queuedKeys(ctx context.Context) (map[string]bool, error) {
	q, err := m.cfg.Client.QueueAll(ctx)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, r := range q.Rows {
		if id, _, ok := schema.JobIDOfComment(r.Comment); ok && r.UID == m.cfg.Client.UID {
			keys[schema.JobKey(id)] = true
		}
	}
	return keys, nil
}
