package manager

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

// The five-miss rule (contract §9): a job absent from the queue is declared
// lost only after this many successful accounting answers without a record,
// each at least missSpacing after the previous counted one.
const (
	maxMisses   = 5
	missSpacing = 6 * time.Second
)

// Retention of finished results in the observation cache, so that a
// process that looks after the job dir was removed still learns the result.
const (
	finishedKeep = 7 * 24 * time.Hour
	finishedMax  = 4096
)

// observation is the latest view of one live job.
type observation struct {
	JobID      string    `json:"job_id"`
	State      string    `json:"state"`
	Detail     string    `json:"detail,omitempty"` // why the view is not fresh, when it is not
	ObservedAt time.Time `json:"observed_at"`
	// CancelSent says scancel succeeded at this observation, right after
	// the squeue row proved the job is ours.
	CancelSent bool `json:"cancel_sent,omitempty"`
	// InQueue says this observation came from a squeue row.
	InQueue bool `json:"in_queue,omitempty"`
	// Gone says the scheduler answered and squeue no longer lists the job
	// as live (it left the queue, or ended in it): there is nothing left
	// to scancel, and the result follows from accounting.
	Gone bool `json:"gone,omitempty"`
	// Reason is Slurm's reason for a pending job's wait (squeue %r:
	// Priority, Resources, QOSMaxJobsPerUser, …); PendingSince is when it
	// was first seen pending (the start of its pending timeout).
	Reason       string    `json:"reason,omitempty"`
	PendingSince time.Time `json:"pending_since,omitzero"`
}

// Finished is the result of a job that reached a terminal state.
type Finished struct {
	SlurmJobID string    `json:"slurm_job_id"`
	SubmitTime time.Time `json:"submit_time,omitzero"` // of the run this is the result of
	State      string    `json:"state"`
	ReturnCode int       `json:"return_code"`
	Detail     string    `json:"detail,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
}

// cache is the workspace's shared observation file. Jobs is keyed by Slurm
// job id, Finished by NVFlare job id.
type cache struct {
	Format      int                    `json:"format"`
	RefreshedAt time.Time              `json:"refreshed_at"`
	Jobs        map[string]observation `json:"jobs"`
	Finished    map[string]Finished    `json:"finished"`
}

// observer coordinates every process watching one workspace: at most one
// squeue (and one sacct for jobs that left the queue) per poll interval,
// whoever asks. The file lock serialises processes; mu serialises the
// goroutines of this one.
type observer struct {
	m   *Manager
	dir string // <workspace>/.nvflare_slurm

	mu  sync.Mutex
	mem *cache // the last cache this process read or wrote
	// removals are the job dirs of results recorded in the cache being
	// written: they are removed only once that cache is on disk, so a
	// crash or a failed write never loses a result together with its dir.
	removals []string
	// failedAt is when this process last refreshed but could not write
	// the cache; it waits one poll interval before trying again, so that
	// a full disk does not turn every poll into a scheduler query.
	failedAt time.Time
	// took holds how long this process's last refreshes took (squeue,
	// sacct, the cache write), newest first: see lead.
	took [3]time.Duration
}

// lead is how much less than one poll interval an observation stays
// fresh: the longest of this process's last three refreshes plus a
// twenty-fifth of the interval (a fiftieth for the margin a wait wakes
// after the expiry, nextWait; a fiftieth for the answer's way to the
// parent and a refresh slower than the last three), at most a quarter of
// the interval. A refresh that starts then has its answer in about one
// poll interval less a fiftieth after the previous one started, so a
// change in the queue — a job's end — reaches a waiting parent within
// one poll interval of the observation that missed it, instead of one
// interval plus the query (issue 27; with a fiftieth alone the parents
// saw an end up to 10.1-10.3 s after the worker's exit in three runs of
// bench-federation at a 10 s interval, an upper bound: slurmctld records
// the end about 0.1 s after the exit). It costs the share of lead in the interval in queries:
// 5 % for a refresh of 0.1 s in 10 s.
func (o *observer) lead() time.Duration {
	p := o.m.cfg.PollInterval
	return min(slices.Max(o.took[:])+p/25, p/4)
}

func (o *observer) fresh(c *cache, now time.Time) bool {
	if c == nil || c.RefreshedAt.IsZero() {
		return false
	}
	age := now.Sub(c.RefreshedAt)
	return age >= 0 && age < o.m.cfg.PollInterval-o.lead()
}

// view returns an observation no older than one poll interval less lead, refreshing
// it when no process has done so (or when covers says it lacks a job this
// process must know about). mutate, when set, runs under the lock before a
// refresh that happens regardless of age.
func (o *observer) view(ctx context.Context, mutate func() error, covers func(*cache) bool) (*cache, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if mutate == nil {
		if o.fresh(o.mem, o.m.now()) && covers(o.mem) {
			return o.mem, nil
		}
		if since := o.m.now().Sub(o.failedAt); !o.failedAt.IsZero() && since >= 0 && since < o.m.cfg.PollInterval {
			return nil, fmt.Errorf("the observation cache could not be written %s ago; next attempt after one poll interval", since.Round(time.Second))
		}
		// The cache is replaced by rename, so reading it unlocked sees one
		// whole version: most callers find another process's fresh refresh
		// here and never touch the lock.
		if c, err := o.read(); err == nil && o.fresh(c, o.m.now()) && covers(c) {
			o.mem = c
			return c, nil
		}
	}
	unlock, err := o.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	o.removals = nil
	c, err := o.read()
	if err != nil {
		return nil, err
	}
	if mutate != nil {
		if err := mutate(); err != nil {
			return nil, err
		}
	} else if o.fresh(c, o.m.now()) && covers(c) {
		o.mem = c
		return c, nil
	}
	o.refresh(ctx, c)
	err = o.write(c)
	copy(o.took[1:], o.took[:])
	o.took[0] = max(o.m.now().Sub(c.RefreshedAt), 0)
	if err != nil {
		o.failedAt = c.RefreshedAt
		return nil, err
	}
	o.failedAt = time.Time{}
	o.mem = c
	return c, nil
}

// withLock runs f with the workspace lock held and the current cache.
func (o *observer) withLock(ctx context.Context, f func(c *cache) (bool, error)) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	unlock, err := o.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := o.read()
	if err != nil {
		return err
	}
	o.removals = nil
	changed, err := f(c)
	if err != nil || !changed {
		o.removals = nil
		return err
	}
	if err := o.write(c); err != nil {
		return err
	}
	o.mem = c
	return nil
}

func (o *observer) lock(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := filepath.Join(o.dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600) // never through a symlink
	if err != nil {
		return nil, fmt.Errorf("open workspace lock: %w", err)
	}
	// Holders keep the lock for one refresh (two query timeouts and any
	// scancel). Waiters try again every lockRetry, so that a holder that
	// is stopped (^Z) or hung cannot block them beyond their context or
	// lockPatience; a poll that gives up reports an error and the job
	// stays as it was.
	deadline := time.Now().Add(o.lockPatience())
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || (!errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR)) {
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("held by another process for more than %s", o.lockPatience().Round(time.Second))
			break
		}
		if err = sleepCtx(ctx, lockRetry); err != nil {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// lockRetry is how often a waiter tries the workspace lock again.
const lockRetry = 50 * time.Millisecond

// lockPatience is how long a waiter tries before giving up for this poll:
// longer than any refresh (two queries, a scancel) plus one poll interval.
func (o *observer) lockPatience() time.Duration {
	t := o.m.cfg.Client.Timeouts
	return 2*t.Query + 2*t.Cancel + o.m.cfg.PollInterval
}

func (o *observer) read() (*cache, error) {
	c := &cache{Format: 1, Jobs: map[string]observation{}, Finished: map[string]Finished{}}
	data, err := readNoFollow(filepath.Join(o.dir, cacheFile), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, c); err != nil || c.Format != 1 {
		// A damaged cache only costs one refresh; never trust it.
		o.m.log.Warn("ignoring unreadable observation cache", "file", filepath.Join(o.dir, cacheFile), "err", err)
		c = &cache{Format: 1}
	}
	if c.Jobs == nil {
		c.Jobs = map[string]observation{}
	}
	if c.Finished == nil {
		c.Finished = map[string]Finished{}
	}
	return c, nil
}

// write replaces the cache file with c, then removes the job dirs whose
// results c records. When the write fails, those dirs stay: the next
// refresh finds the jobs again and records their results then.
func (o *observer) write(c *cache) error {
	dirs := o.removals
	o.removals = nil
	o.pruneFinished(c)
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := o.m.writeCache(filepath.Join(o.dir, cacheFile), data, 0o600); err != nil {
		return fmt.Errorf("record observations in %s: %w", filepath.Join(o.dir, cacheFile), err)
	}
	for _, dir := range dirs {
		if err := removeJobDir(dir); err != nil {
			o.m.log.Error("cannot remove the artifacts of a finished job", "dir", dir, "err", err)
		}
	}
	return nil
}

func (o *observer) pruneFinished(c *cache) {
	now := o.m.now()
	maps.DeleteFunc(c.Finished, func(_ string, f Finished) bool { return now.Sub(f.FinishedAt) > finishedKeep })
	if len(c.Finished) <= finishedMax {
		return
	}
	oldest := slices.SortedFunc(maps.Keys(c.Finished), func(a, b string) int { return c.Finished[a].FinishedAt.Compare(c.Finished[b].FinishedAt) })
	for _, k := range oldest[:len(oldest)-finishedMax] {
		delete(c.Finished, k)
	}
}

// liveJob is one job the refresh looks at.
type liveJob struct {
	info   HandleInfo
	dir    string
	onDisk bool
	timers jobTimers
	dirty  bool
	// queueState is the terminal state squeue still lists the job in.
	queueState string
	// h is this process's handle of the job, if any: it keeps a copy of
	// the timers so that they survive the removal of the job dir by hand.
	h *Handle
}

// resetMisses restarts the five-miss count: the scheduler has the job.
func (j *liveJob) resetMisses() {
	if j.timers.Misses != 0 {
		j.timers.Misses, j.timers.LastMiss, j.dirty = 0, time.Time{}, true
	}
}

// ask asks squeue about jobs, then sacct about those it no longer lists as
// live (a terminal row sets queueState: the job exists, so the result comes
// from accounting, and its absence there is not a miss), and passes each
// job to queued (its live squeue row), accounted (its accounting record, or
// its absence) or failed (the command gave no answer, or, protocol true,
// the job's row broke the protocol). With warnUnasked (a status refresh,
// not gc), a squeue row of a job it did not ask about is logged.
func (m *Manager) ask(ctx context.Context, jobs []*liveJob, warnUnasked bool, failed func(j *liveJob, err error, protocol bool),
	queued func(*liveJob, scheduler.QueueRow), accounted func(*liveJob, scheduler.AcctRow, bool)) {
	cl := m.cfg.Client
	ids := slurmIDs(jobs)
	q, qerr := cl.Queue(ctx, ids)
	if qerr == nil && warnUnasked {
		asked := make(map[string]bool, len(ids))
		for _, id := range ids {
			asked[id] = true
		}
		for _, r := range q.Rows {
			if !asked[r.JobID] {
				m.log.Warn("ignoring a squeue row of a job that was not asked about", "slurm_job_id", r.JobID, "job_name", r.Name)
			}
		}
	}
	var left []*liveJob
	for _, j := range jobs {
		if qerr != nil {
			failed(j, qerr, false)
			continue
		}
		row, found, err := q.Lookup(j.info.SlurmJobID, j.info.JobName, m.marker(j.info), cl.UID)
		switch {
		case err != nil:
			failed(j, err, true)
		case found && !isTerminal(row.State):
			queued(j, row)
		default:
			j.queueState = row.State
			left = append(left, j)
		}
	}
	a, aerr := cl.Accounting(ctx, slurmIDs(left)) // no sacct for no ids
	for _, j := range left {
		if aerr != nil {
			failed(j, aerr, false)
			continue
		}
		rec, found, err := a.Lookup(j.info.SlurmJobID, j.info.JobName, cl.User, j.info.SubmitTime)
		if err != nil {
			failed(j, err, true)
			continue
		}
		accounted(j, rec, found)
	}
}

// slurmIDs are the Slurm job ids of jobs, in order.
func slurmIDs(jobs []*liveJob) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.info.SlurmJobID
	}
	return ids
}

// listJobs reads the handle of every job dir of the workspace. Dirs without
// a (valid) handle are skipped: gc deals with them.
func (o *observer) listJobs() ([]*liveJob, error) {
	jobsDir := filepath.Join(o.dir, jobsDirName)
	ents, err := os.ReadDir(jobsDir)
	if err != nil {
		return nil, fmt.Errorf("list job dirs: %w", err)
	}
	var jobs []*liveJob
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(jobsDir, e.Name())
		h, err := readHandle(dir)
		if err != nil {
			if !errors.Is(err, errNoHandle) {
				o.m.log.Warn("skipping job dir with an unreadable handle", "dir", dir, "err", err)
			}
			continue
		}
		if e.Name() != schema.JobKey(h.JobID) {
			o.m.log.Warn("skipping job dir whose handle names another job", "dir", dir, "job_id", h.JobID)
			continue
		}
		t, err := readTimers(dir)
		if err != nil {
			o.m.log.Warn("resetting unreadable job timers", "dir", dir, "err", err)
		}
		jobs = append(jobs, &liveJob{info: h, dir: dir, onDisk: true, timers: t})
	}
	return jobs, nil
}

// refresh asks the scheduler about every live job of the workspace (plus
// this process's jobs whose job dir is gone) and records what it learned
// in c, the job dirs' timers and, for jobs that ended, by removing their
// dirs. It never fails: a scheduler that does not answer leaves every job
// as it was, with a detail saying why.
func (o *observer) refresh(ctx context.Context, c *cache) {
	now := o.m.now()
	c.RefreshedAt = now
	jobs, err := o.listJobs()
	if err != nil {
		o.m.log.Error("cannot list job dirs", "err", err)
		return
	}
	mine := o.m.liveHandles()
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.info.SlurmJobID] = true
		if h := mine[j.info.SlurmJobID]; h != nil && h.info.JobID == j.info.JobID {
			j.h = h
		}
	}
	for id, h := range mine {
		if seen[id] {
			continue
		}
		if f, ok := c.Finished[h.info.JobID]; ok && f.SlurmJobID == id {
			continue
		}
		dir := o.m.JobDir(h.info.JobID)
		if _, err := os.Lstat(filepath.Join(dir, handleFile)); err == nil {
			continue
		}
		seen[id] = true
		// The job dir is gone (removed by hand): the job is still asked
		// about, with the clocks this process last saw.
		jobs = append(jobs, &liveJob{info: h.info, dir: dir, timers: h.timers, h: h})
	}
	// seen holds the id of every job: the views of any other are dropped.
	maps.DeleteFunc(c.Jobs, func(id string, _ observation) bool { return !seen[id] })
	if len(jobs) == 0 {
		return
	}
	slices.SortFunc(jobs, func(a, b *liveJob) int { return cmpID(a.info.SlurmJobID, b.info.SlurmJobID) })
	o.m.ask(ctx, jobs, true, func(j *liveJob, err error, protocol bool) {
		if !protocol {
			o.note(c, j, "", "no fresh answer: "+err.Error(), now)
			return
		}
		o.m.log.Error("job remains non-terminal after a scheduler protocol error", "job_id", j.info.JobID, "slurm_job_id", j.info.SlurmJobID, "err", err)
		o.note(c, j, "", err.Error(), now)
	}, func(j *liveJob, row scheduler.QueueRow) {
		o.queued(ctx, c, j, row.State, row.Reason, now)
	}, func(j *liveJob, rec scheduler.AcctRow, found bool) {
		o.accounted(c, j, rec, found, now)
	})
	for _, j := range jobs {
		if j.dirty && j.onDisk {
			if err := writeTimers(j.dir, j.timers); err != nil {
				o.m.log.Error("cannot record job timers", "dir", j.dir, "err", err)
			}
		}
		if j.h != nil {
			j.h.timers = j.timers
		}
	}
}

// note records a non-terminal view; an empty state keeps the last one.
func (o *observer) note(c *cache, j *liveJob, state, detail string, now time.Time) {
	prev, ok := c.Jobs[j.info.SlurmJobID]
	state = cmp.Or(state, prev.State, stateSubmitted)
	at := now
	if detail != "" && ok {
		at = prev.ObservedAt
	}
	c.Jobs[j.info.SlurmJobID] = observation{JobID: j.info.JobID, State: state, Detail: detail, ObservedAt: at}
}

// queued handles a job squeue shows live: pending timer, cancellation.
func (o *observer) queued(ctx context.Context, c *cache, j *liveJob, state, reason string, now time.Time) {
	j.resetMisses()
	detail := ""
	if IsPending(state) {
		if j.timers.PendingSince.IsZero() {
			j.timers.PendingSince, j.dirty = now, true
		}
		limit := o.m.pendingLimit(scheduler.Seconds(j.info.PendingTimeout))
		if !j.timers.CancelRequested && now.Sub(j.timers.PendingSince) >= limit {
			o.m.log.Warn("job exceeded its pending timeout; cancelling it", "job_id", j.info.JobID, "slurm_job_id", j.info.SlurmJobID, "pending_timeout", limit, "reason", reason)
			j.timers.CancelRequested, j.dirty = true, true
		}
	}
	sent := false
	if j.timers.CancelRequested {
		// This squeue row has just proved the job is ours (uid, name, marker).
		if err := o.m.cfg.Client.Cancel(ctx, j.info.SlurmJobID); err != nil {
			o.m.log.Error("scancel failed; will retry at the next poll", "slurm_job_id", j.info.SlurmJobID, "err", err)
			detail = "cancellation requested; " + err.Error()
		} else {
			detail, sent = "cancellation requested", true
		}
	}
	o.note(c, j, state, detail, now)
	obs := c.Jobs[j.info.SlurmJobID]
	obs.CancelSent, obs.InQueue = sent, true
	if IsPending(state) {
		obs.Reason, obs.PendingSince = reason, j.timers.PendingSince
	}
	c.Jobs[j.info.SlurmJobID] = obs
}

// accounted handles a job that left the queue (or shows a terminal state
// there) with its accounting record rec (found: there is one).
func (o *observer) accounted(c *cache, j *liveJob, rec scheduler.AcctRow, found bool, now time.Time) {
	detail := ""
	switch {
	case found:
		j.resetMisses()
		if isTerminal(rec.State) {
			detail = fmt.Sprintf("exit code %d:%d, derived %d:%d", rec.Exit.Status, rec.Exit.Signal, rec.DerivedExit.Status, rec.DerivedExit.Signal)
			if j.timers.UserAbort {
				detail += ", user abort"
			}
			o.finish(c, j, rec.State, returnCode(rec.State, rec.Exit, rec.DerivedExit, j.timers.UserAbort), detail, now)
			return
		}
	case j.queueState != "":
		j.resetMisses()
		detail = fmt.Sprintf("ended in the queue as %s; waiting for its accounting record", j.queueState)
	default:
		if j.timers.Misses == 0 || now.Sub(j.timers.LastMiss) >= missSpacing {
			j.timers.Misses++
			j.timers.LastMiss = now
			j.dirty = true
		}
		if j.timers.Misses >= maxMisses {
			o.m.log.Error("slurm accounting has no record of the job after five healthy answers", "job_id", j.info.JobID, "slurm_job_id", j.info.SlurmJobID)
			o.finish(c, j, stateLost, RCInfrastructure, fmt.Sprintf("not in the queue and no accounting record after %d answers", maxMisses), now)
			return
		}
		detail = fmt.Sprintf("not in the queue; no accounting record yet (%d/%d)", j.timers.Misses, maxMisses)
	}
	// The scheduler answered that the job is no longer live in the queue
	// (rec.State is "" without a record: the last state stays).
	o.note(c, j, rec.State, detail, now)
	obs := c.Jobs[j.info.SlurmJobID]
	obs.Gone = true
	c.Jobs[j.info.SlurmJobID] = obs
}

// finish records a terminal result and removes the job's artifacts.
func (o *observer) finish(c *cache, j *liveJob, state string, rc int, detail string, now time.Time) {
	if v, why := o.m.refineReturnCode(j.info.JobID, rc); why != "" {
		rc = v
		detail = strings.TrimPrefix(detail+"; "+why, "; ")
	}
	delete(c.Jobs, j.info.SlurmJobID)
	c.Finished[j.info.JobID] = Finished{SlurmJobID: j.info.SlurmJobID, SubmitTime: j.info.SubmitTime, State: state, ReturnCode: rc, Detail: detail, FinishedAt: now}
	j.dirty = false
	if j.onDisk {
		o.removals = append(o.removals, j.dir)
	}
	o.m.log.Info("job finished", slog.String("job_id", j.info.JobID), slog.String("slurm_job_id", j.info.SlurmJobID),
		slog.String("state", state), slog.Int("return_code", rc))
}

// expiry is when the observation this process last used stops being
// fresh; zero when it has none.
func (o *observer) expiry() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mem == nil || o.mem.RefreshedAt.IsZero() {
		return time.Time{}
	}
	return o.mem.RefreshedAt.Add(o.m.cfg.PollInterval - o.lead())
}

// cmpID orders numeric ids numerically.
func cmpID(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}
