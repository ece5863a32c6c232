package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
)

// Status is what a handle knows about its job.
type Status struct {
	JobID      string `json:"job_id"`
	SlurmJobID string `json:"slurm_job_id"`
	State      string `json:"state"`
	Terminal   bool   `json:"terminal"`
	ReturnCode int    `json:"return_code"` // 127 until terminal
	Detail     string `json:"detail,omitempty"`
	// A pending job says why it waits: Slurm's reason (squeue %r,
	// "" when Slurm gives none), since when it is pending and the pending
	// timeout (seconds) that cancels it then.
	Reason         string    `json:"reason,omitempty"`
	PendingSince   time.Time `json:"pending_since,omitzero"`
	PendingTimeout float64   `json:"pending_timeout,omitempty"`
}

// Pending says, for people, how long a pending job has waited, of its
// pending timeout, and why, as of now: "pending for 9m0s of its 10m0s
// pending timeout; Slurm's reason: Priority (jobs of higher priority are
// ahead of it)". "" unless the job is pending and that is known.
func (s Status) Pending(now time.Time) string {
	if s.PendingSince.IsZero() || !IsPending(s.State) {
		return ""
	}
	out := fmt.Sprintf("pending for %s", now.Sub(s.PendingSince).Round(time.Second))
	if s.PendingTimeout > 0 {
		out += fmt.Sprintf(" of its %s pending timeout", (time.Duration(s.PendingTimeout * float64(time.Second))).Round(time.Second))
	}
	if s.Reason == "" {
		return out + "; Slurm gives no reason"
	}
	out += "; Slurm's reason: " + s.Reason
	if why := pendingReasons[s.Reason]; why != "" {
		out += " (" + why + ")"
	}
	return out
}

// Handle is one submitted job.
type Handle struct {
	m    *Manager
	info HandleInfo
	done atomic.Pointer[Finished] // set once the result is known
	// timers is the last copy of the job's timers this process saw or
	// wrote (guarded by the observer's mu): when the job dir is removed by
	// hand, the refresh continues from it instead of starting over.
	timers jobTimers
}

// covered says whether c can answer for h. A job whose dir is gone is
// asked about only by the processes holding its handle: when a cache that
// another process refreshed lacks it, this process must refresh for it. A
// job with its dir (launched after the last refresh) simply waits for the
// next one.
func (h *Handle) covered(c *cache) bool {
	if f, ok := c.Finished[h.info.JobID]; ok && f.SlurmJobID == h.info.SlurmJobID {
		return true
	}
	if _, ok := c.Jobs[h.info.SlurmJobID]; ok {
		return true
	}
	_, err := os.Lstat(filepath.Join(h.m.JobDir(h.info.JobID), handleFile))
	return err == nil
}

// Info returns the persisted handle.
func (h *Handle) Info() HandleInfo { return h.info }

// Workspace is the root (a real path) of the workspace the job belongs to.
func (h *Handle) Workspace() string { return h.m.cfg.Workspace }

// Poll returns the job's status from an observation at most one poll
// interval old; it asks the scheduler only when no process on the
// workspace has done so within the interval.
func (h *Handle) Poll(ctx context.Context) (Status, error) {
	if f := h.done.Load(); f != nil {
		return h.info.finished(*f), nil
	}
	c, err := h.m.obs.view(ctx, nil, h.covered)
	if err != nil {
		return h.info.unknown(stateSubmitted, err.Error()), err
	}
	return h.from(c), nil
}

func (h *Handle) from(c *cache) Status {
	if f, ok := c.Finished[h.info.JobID]; ok && f.SlurmJobID == h.info.SlurmJobID {
		h.done.Store(&f)
		h.m.forget(h)
		return h.info.finished(f)
	}
	if o, ok := c.Jobs[h.info.SlurmJobID]; ok {
		st := h.info.unknown(o.State, o.Detail)
		if IsPending(o.State) && !o.PendingSince.IsZero() {
			st.Reason, st.PendingSince, st.PendingTimeout = o.Reason, o.PendingSince, h.m.pendingLimit(scheduler.Seconds(h.info.PendingTimeout)).Seconds()
		}
		return st
	}
	return h.info.unknown(stateSubmitted, "")
}

// pendingLimit is a job's effective pending timeout: its own, which may
// only lower the site's (unset, or a damaged or foreign handle.json: the
// site's).
func (m *Manager) pendingLimit(job time.Duration) time.Duration {
	if job <= 0 || job > m.cfg.PendingTimeout {
		return m.cfg.PendingTimeout
	}
	return job
}

// unknown is the status of the job of handle i while it has no result.
func (i HandleInfo) unknown(state, detail string) Status {
	return Status{JobID: i.JobID, SlurmJobID: i.SlurmJobID, State: state, ReturnCode: rcUnknown, Detail: detail}
}

// finished is the status of job i.JobID that ended with result f.
func (i HandleInfo) finished(f Finished) Status {
	return Status{JobID: i.JobID, SlurmJobID: f.SlurmJobID, State: f.State, Terminal: true, ReturnCode: f.ReturnCode, Detail: f.Detail}
}

// WaitReporting polls until the job is terminal or ctx ends, sleeping
// until the next poll (nextWait) in between, and calls report with each
// status a poll sees before the end (nil: none), so that a caller can say
// what the job waits for while it waits. Errors of a single poll (a lock
// or file problem) are logged and retried; they never end the wait.
func (h *Handle) WaitReporting(ctx context.Context, report func(Status)) (Status, error) {
	for {
		st := h.pollReporting(ctx, report)
		if st.Terminal {
			return st, nil
		}
		if err := h.m.cfg.Sleep(ctx, h.m.nextWait()); err != nil {
			return st, err
		}
	}
}

// pollReporting polls once and gives a status short of the end to report
// (nil: none); a failed poll is logged, for the caller to retry.
func (h *Handle) pollReporting(ctx context.Context, report func(Status)) Status {
	st, err := h.Poll(ctx)
	switch {
	case st.Terminal:
	case err == nil && report != nil:
		report(st)
	case err != nil && ctx.Err() == nil:
		h.m.log.Warn("poll failed; retrying", "job_id", h.info.JobID, "err", err)
	}
	return st
}

// nextWait is how long a wait sleeps before its next poll: until the
// shared observation it last read expires, plus a spread of up to a
// fiftieth of a poll interval (the jitter, 0.2 s at 10 s), so that waiters
// never wake while it is fresh (and learn nothing) and never sleep through
// another process's refresh after it expired. The first waiter to wake
// refreshes, the others read its answer: the observation expiring one
// interval less lead after its refresh began (observer.lead), a result
// shows within one poll interval however many processes watch the
// workspace, and one squeue per interval (less lead) serves them all. Without an observation, or
// with one that expired already (a failed refresh), it sleeps one poll
// interval ±10 %.
func (m *Manager) nextWait() time.Duration {
	exp := m.obs.expiry()
	now := m.now()
	if exp.IsZero() || !exp.After(now) || exp.Sub(now) > m.cfg.PollInterval {
		return m.waitInterval()
	}
	return exp.Sub(now) + time.Duration(float64(m.cfg.PollInterval)*0.01*(1+m.jitter()))
}

func (m *Manager) waitInterval() time.Duration {
	return time.Duration(float64(m.cfg.PollInterval) * (1 + 0.1*m.jitter()))
}

// jitter is the configured jitter, clamped to [-1, 1].
func (m *Manager) jitter() float64 {
	return min(max(m.cfg.Jitter(), -1), 1)
}

// Terminate records a user abort in the job dir (so that every process
// reports 9 once the job ends cancelled or completed), then re-verifies
// ownership with a fresh squeue and cancels the job with scancel. A job
// that is no longer in the queue is not cancelled; its result follows from
// accounting.
func (h *Handle) Terminate(ctx context.Context) (Status, error) {
	return h.terminate(ctx, true)
}

// TerminateForCleanup is Terminate for an abort that is not the user's:
// NVFlare's clean-up of a job whose heartbeat was lost. The job then ends
// with 104 (infrastructure), as NVFlare's own launcher reports it; a user
// abort recorded earlier is kept (9).
func (h *Handle) TerminateForCleanup(ctx context.Context) (Status, error) {
	return h.terminate(ctx, false)
}

func (h *Handle) terminate(ctx context.Context, user bool) (Status, error) {
	if f := h.done.Load(); f != nil {
		return h.info.finished(*f), nil
	}
	dir := h.m.JobDir(h.info.JobID)
	var recorded bool
	c, err := h.m.obs.view(ctx, func() error {
		cur, err := readHandle(dir)
		if errors.Is(err, errNoHandle) {
			if _, serr := os.Lstat(dir); errors.Is(serr, fs.ErrNotExist) {
				// The job dir was removed by hand: this process still
				// watches the job, so the abort is kept in its memory.
				h.timers.CancelRequested, h.timers.UserAbort = true, h.timers.UserAbort || user
				recorded = true
				return nil
			}
		}
		if err != nil || cur.SlurmJobID != h.info.SlurmJobID {
			return nil // finished and removed meanwhile: nothing to record
		}
		t, err := readTimers(dir)
		if err != nil {
			return err
		}
		t.CancelRequested, t.UserAbort = true, t.UserAbort || user
		if err := writeTimers(dir, t); err != nil {
			return fmt.Errorf("record user abort: %w", err)
		}
		h.timers = t
		recorded = true
		return nil
	}, nil)
	if err != nil {
		return h.info.unknown(stateSubmitted, err.Error()), err
	}
	st := h.from(c)
	if st.Terminal {
		return st, nil
	}
	if !recorded {
		return st, fmt.Errorf("job %s: its handle vanished before the abort was recorded", h.info.JobID)
	}
	h.m.log.Info("user abort requested", "job_id", h.info.JobID, "slurm_job_id", h.info.SlurmJobID)
	// Out of the queue (Gone) there is nothing to scancel: the result
	// follows from accounting and maps CANCELLED or COMPLETED to 9.
	if o := c.Jobs[h.info.SlurmJobID]; o.CancelSent || o.Gone {
		return st, nil
	}
	return st, fmt.Errorf("%w: %s", ErrCancelPending, st.Detail)
}

// ErrCancelPending: the abort is recorded but scancel was not sent, because
// the scheduler did not answer or its answer did not prove the job is ours.
// Every later poll of the workspace retries it.
var ErrCancelPending = errors.New("user abort recorded, but scancel was not sent yet (any later poll on this workspace retries it)")

// LiveTermination is what TerminateLive did to one job: its status after
// the abort, or why the abort failed.
type LiveTermination struct {
	Status
	Error string `json:"error,omitempty"`
}

// TerminateLive aborts every job of the workspace that has a handle and
// has not ended, each as Terminate does (abort recorded, ownership
// verified with squeue, then scancel): an operator's cancel --all-live.
func (m *Manager) TerminateLive(ctx context.Context) ([]LiveTermination, error) {
	out := []LiveTermination{}
	err := m.eachJob(ctx, true, func(h *Handle, st Status, err error) {
		if err == nil {
			st, err = h.Terminate(ctx)
		}
		lt := LiveTermination{Status: st}
		if err != nil {
			lt.Error = err.Error()
		}
		out = append(out, lt)
	})
	return out, err
}

// eachJob calls fn, in job id order, for every job of the workspace that
// has a handle, with its status as a poll sees it (only those that have not
// ended when live is true), or whose handle cannot be opened (openErr, with
// the ids the handle names).
func (m *Manager) eachJob(ctx context.Context, live bool, fn func(h *Handle, st Status, openErr error)) error {
	infos, err := ListHandles(m.cfg.Workspace)
	if err != nil {
		return fmt.Errorf("list the jobs of workspace %s: %w", m.cfg.Workspace, err)
	}
	for _, info := range infos {
		h, err := m.Open(info.JobID)
		if err != nil {
			fn(nil, info.unknown(stateSubmitted, err.Error()), err)
			continue
		}
		if st, _ := h.Poll(ctx); !live || !st.Terminal {
			fn(h, st, nil)
		}
	}
	return nil
}

// Release makes this process stop watching the job, as if it had exited:
// the manager drops the handle from its live set (its polls no longer
// include the job), and what remains is the persisted handle and the
// shared observation, through which another process re-attaches (check's
// restart probe). The handle still answers from the shared observation.
func (h *Handle) Release() { h.m.forget(h) }

// LiveStatuses is the status of every job of the workspace that has a
// handle and has not ended (a poll, as status does): what a parent that
// starts finds of its previous process. Nothing is changed.
func (m *Manager) LiveStatuses(ctx context.Context) ([]Status, error) {
	out := []Status{}
	err := m.eachJob(ctx, true, func(_ *Handle, st Status, _ error) { out = append(out, st) })
	return out, err
}

// AllStatuses is the status of every job this workspace knows (status
// --all): each job with a handle, polled as status does (live or ended),
// and each recorded result whose job dir is gone (results are kept for
// seven days), sorted by job id. Nothing is changed.
func (m *Manager) AllStatuses(ctx context.Context) ([]Status, error) {
	out := []Status{}
	seen := map[string]bool{}
	if err := m.eachJob(ctx, false, func(_ *Handle, st Status, _ error) {
		seen[st.JobID] = true
		out = append(out, st)
	}); err != nil {
		return nil, err
	}
	c, err := m.obs.read()
	if err != nil {
		return nil, fmt.Errorf("read the recorded results of workspace %s: %w", m.cfg.Workspace, err)
	}
	for id, f := range c.Finished {
		if !seen[id] {
			out = append(out, HandleInfo{JobID: id}.finished(f))
		}
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.JobID, b.JobID) })
	return out, nil
}
