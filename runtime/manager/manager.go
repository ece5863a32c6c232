// Package manager starts NVFlare job processes as Slurm batch jobs and
// learns how they ended (contract §9): launch, poll, wait, terminate and
// shutdown over handles persisted in each job dir, with the scheduler load
// of a whole workspace bounded through one shared observation cache.
package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/renameio/v2"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

// States a Status reports besides Slurm's own words.
const (
	stateSubmitted = "SUBMITTED" // accepted by sbatch, not observed yet
	stateLost      = "LOST"      // gone from the queue with no accounting record (→ 104)
)

// Config is what a Manager needs.
type Config struct {
	Workspace      string // canonical workspace root (ValidateWorkspace)
	Client         *scheduler.Client
	PollInterval   time.Duration
	PendingTimeout time.Duration // the site value; a job may only lower it

	// Injected for tests; zero values mean the real clock, sleep and a
	// ±10 % uniform jitter.
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func() float64 // in [-1, 1]
	Logger *slog.Logger
}

// Manager owns the live handles of one process on one workspace.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	jobsDir string
	obs     *observer

	mu      sync.Mutex
	handles map[string]*Handle // by NVFlare job id; nil while launching

	// Test hooks: the production value is set by New (or nil).
	noSync bool // skip the fsync of handle.json
	// handleStaged, when set, runs between writing the handle's temp
	// file and publishing it: where a crash leaves only the temp file.
	handleStaged func(tmp string)
	// writeCache replaces the observation cache atomically
	// (renameio.WriteFile; tests make it fail).
	writeCache func(path string, data []byte, perm os.FileMode, _ ...renameio.Option) error
}

// New opens a validated workspace: it creates .nvflare_slurm/jobs (0700)
// when missing and runs no scheduler command.
func New(cfg Config) (*Manager, error) {
	if cfg.Client == nil {
		return nil, errors.New("manager: no scheduler client")
	}
	if cfg.PollInterval <= 0 || cfg.PendingTimeout <= 0 {
		return nil, errors.New("manager: poll interval and pending timeout must be positive")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func() float64 { return rand.Float64()*2 - 1 }
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	control := filepath.Join(cfg.Workspace, controlDir)
	jobs := filepath.Join(control, jobsDirName)
	for _, d := range []string{control, jobs} {
		if err := ensureDir(d, os.Getuid()); err != nil {
			return nil, err
		}
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, jobsDir: jobs, handles: map[string]*Handle{}, writeCache: renameio.WriteFile}
	m.obs = &observer{m: m, dir: control}
	return m, nil
}

func (m *Manager) now() time.Time { return m.cfg.Now() }

// JobsDir is <workspace>/.nvflare_slurm/jobs.
func (m *Manager) JobsDir() string { return m.jobsDir }

// JobDir is the artifact directory of an NVFlare job id.
func (m *Manager) JobDir(jobID string) string {
	return filepath.Join(m.jobsDir, schema.JobKey(jobID))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Job is one compiled job, ready to submit.
type Job struct {
	JobID          string
	Dir            string   // must be JobDir(JobID)
	Name           string   // Slurm job name
	Marker         string   // Slurm comment, nvfl:<job id>
	Argv           []string // sbatch argv; argv[0] is replaced by the resolved sbatch
	Env            []string // sbatch's environment
	PendingTimeout time.Duration
	// Write creates Dir exclusively with the job's artifacts. An existing
	// dir must give an error wrapping fs.ErrExist.
	Write func() error
	// Attach: a job id that already ran to a recorded result is answered
	// with a FinishedError instead of being submitted again (a parent that
	// asks again for a job it launched before a restart).
	Attach bool
}

// FinishedError is Launch's answer, for a Job with Attach, when the job id
// already ran to a recorded result: nothing was submitted.
type FinishedError struct {
	JobID  string
	Result Finished
}

func (e *FinishedError) Error() string {
	return fmt.Sprintf("job %s already ran as Slurm job %s and ended %s (return code %d)",
		e.JobID, e.Result.SlurmJobID, e.Result.State, e.Result.ReturnCode)
}

// RunningError is Launch's refusal of a job whose handle is recorded in
// its job dir: the job was launched, by this or another process (a parent
// before its restart), and has not ended. Info is that handle.
type RunningError struct{ Info HandleInfo }

func (e *RunningError) Error() string {
	return fmt.Sprintf("job %s is already running as Slurm job %s (submitted %s); relaunch only after it ended",
		e.Info.JobID, e.Info.SlurmJobID, e.Info.SubmitTime.Format(time.RFC3339))
}

var clusterRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^` + scheduler.ClusterNameChars + `$`) })

// Launch writes the job's artifacts, submits it once and returns its live
// handle. Any failure removes the job dir it created.
func (m *Manager) Launch(ctx context.Context, job Job) (*Handle, error) {
	if job.Dir != m.JobDir(job.JobID) {
		return nil, fmt.Errorf("job %s: artifact dir %s is not %s", job.JobID, job.Dir, m.JobDir(job.JobID))
	}
	m.mu.Lock()
	if h, ok := m.handles[job.JobID]; ok {
		m.mu.Unlock()
		if h != nil && job.Attach {
			// Launched by, or watched in, this process (wait --follow
			// launches and watches in one): the running job, as its
			// handle file would say to another process.
			return nil, &RunningError{Info: h.info}
		}
		return nil, fmt.Errorf("job %s already has a live handle in this process", job.JobID)
	}
	m.handles[job.JobID] = nil // reserved while launching
	m.mu.Unlock()

	h, err := m.launch(ctx, job)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		delete(m.handles, job.JobID)
		return nil, err
	}
	m.handles[job.JobID] = h
	return h, nil
}

func (m *Manager) launch(ctx context.Context, job Job) (*Handle, error) {
	if prev, err := readHandle(job.Dir); err == nil {
		return nil, withHint(&RunningError{Info: prev},
			fmt.Sprintf("wait for it ('flare-slurm wait --workspace %s --job-id %s') or stop it ('flare-slurm cancel --workspace %s --job-id %s')",
				shell.Quote(m.cfg.Workspace), shell.Quote(job.JobID), shell.Quote(m.cfg.Workspace), shell.Quote(job.JobID)))
	}
	if _, err := os.Lstat(job.Dir); err == nil {
		return nil, m.staleError(job)
	}
	if job.Attach {
		fin, err := m.recorded(ctx, job.JobID)
		if err != nil {
			return nil, fmt.Errorf("job %s: read the recorded results: %w", job.JobID, err)
		}
		if fin != nil {
			return nil, &FinishedError{JobID: job.JobID, Result: *fin}
		}
	}
	if err := job.Write(); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, m.staleError(job)
		}
		m.cleanup(job.Dir)
		return nil, fmt.Errorf("job %s: write artifacts: %w", job.JobID, err)
	}
	pending := m.pendingLimit(job.PendingTimeout)
	if err := ctx.Err(); err != nil {
		m.cleanup(job.Dir)
		return nil, fmt.Errorf("job %s: interrupted before it was submitted; nothing was launched: %w", job.JobID, err)
	}
	// From the submission on nothing interrupts the launch (a signal, a
	// caller giving up): a job that sbatch handed to Slurm gets its
	// handle, or is cancelled, before Launch returns. Every step is
	// bounded by submit_timeout, query_timeout or cancel_timeout. An
	// interrupted sbatch would leave a queued job with live credentials
	// and no handle (issue 25 item 11).
	ctx = context.WithoutCancel(ctx)
	submitted := m.now()
	id, cluster, err := m.cfg.Client.Submit(ctx, job.Argv, job.Env)
	if late, ok := errors.AsType[*scheduler.SubmittedError](err); ok {
		// The job exists in Slurm: track it like any other (NVFlare does
		// the same); never say "not launched" about a job that runs.
		m.log.Warn("sbatch printed a job id and then failed; the job exists in Slurm and is tracked",
			"job_id", job.JobID, "slurm_job_id", id, "sbatch", late.Diag)
		err = nil
	}
	if _, ok := errors.AsType[*scheduler.UnparsedSubmitError](err); ok {
		// sbatch succeeded: Slurm may have taken the job although its
		// answer is not a job id. Find it by name and marker and cancel it
		// (never say "not launched" about a job that may run).
		outcome := m.cancelByIdentity(ctx, job.Name, job.Marker)
		m.cleanup(job.Dir)
		m.log.Error("CRITICAL: sbatch succeeded but its answer is not a job id", "job_id", job.JobID, "err", err, "cancellation", outcome)
		return nil, withHint(fmt.Errorf("job %s: %w; sbatch exited 0, so Slurm may have taken the job: %s", job.JobID, err, outcome),
			"check what the sbatch on the parent's PATH prints ('sbatch --parsable' must print only the job id); launch again once it does")
	}
	if err != nil {
		m.cleanup(job.Dir)
		if _, ok := errors.AsType[*scheduler.RejectedError](err); ok {
			return nil, withHint(fmt.Errorf("Slurm rejected job %s: %w", job.JobID, err),
				"check the job's resources and directives (resource_spec, launcher_spec slurm options, 'flare-slurm render' shows them) against the partition's limits ('scontrol show partition'); nothing was launched and the job dir was removed")
		}
		if scheduler.IsUnavailable(err) {
			return nil, withHint(fmt.Errorf("job %s: %w; the job was not launched (if Slurm accepted it anyway, its allocation cannot start the worker: the artifacts are removed)", job.JobID, err),
				"check that the Slurm controller answers ('flare-slurm bootstrap-check --workspace "+shell.Quote(m.cfg.Workspace)+"'), then launch again")
		}
		return nil, fmt.Errorf("job %s: %w; the job was not launched", job.JobID, err)
	}
	if cluster != "" {
		outcome := "skipped: cluster name is not a plain word"
		if clusterRE().MatchString(cluster) {
			outcome = "ok"
			if cerr := m.cfg.Client.CancelOnCluster(ctx, id, cluster); cerr != nil {
				outcome = cerr.Error()
			}
		}
		m.log.Error("CRITICAL: sbatch routed the job to another cluster; multi-cluster routing is unsupported",
			"job_id", job.JobID, "slurm_job_id", id, "cluster", cluster, "cancellation", outcome)
		m.cleanup(job.Dir)
		return nil, fmt.Errorf("job %s: sbatch answered %s;%s: multi-cluster routing is unsupported (cancellation: %s)", job.JobID, id, cluster, outcome)
	}
	info := HandleInfo{
		Format:         handleFormat,
		JobID:          job.JobID,
		SlurmJobID:     id,
		JobName:        job.Name,
		Marker:         job.Marker,
		SubmitTime:     submitted.UTC(),
		PendingTimeout: pending.Seconds(),
	}
	if err := writeHandle(job.Dir, info, !m.noSync, m.handleStaged); err != nil {
		// Without a handle nobody could watch or clean up the job: stop it
		// (once squeue proves it is ours, like every scancel).
		outcome := m.cancelVerified(ctx, info)
		m.cleanup(job.Dir)
		m.log.Error("CRITICAL: submitted job has no handle", "job_id", job.JobID, "slurm_job_id", id, "cancellation", outcome)
		return nil, fmt.Errorf("job %s: record handle of Slurm job %s: %w (cancellation: %s)", job.JobID, id, err, outcome)
	}
	// The new run supersedes the job's recorded result: a later Open that
	// finds no job dir (removed by hand) must not report the previous
	// run's result for this allocation (issue 9 item 11). Only now, with
	// the handle written: a launch that failed keeps the old result.
	if err := m.obs.withLock(ctx, func(c *cache) (bool, error) {
		f, ok := c.Finished[job.JobID]
		if !ok || f.SlurmJobID == id && f.SubmitTime.Equal(info.SubmitTime) {
			return false, nil
		}
		delete(c.Finished, job.JobID)
		return true, nil
	}); err != nil {
		m.log.Error("cannot forget the job's previous result; a status without its job dir may report it", "job_id", job.JobID, "err", err)
	}
	m.log.Info("job submitted", "job_id", job.JobID, "slurm_job_id", id, "job_name", job.Name)
	return &Handle{m: m, info: info}, nil
}

// cancelVerified cancels a job that has no handle on disk, after squeue
// shows its row with this account's uid, its name and its marker. It says
// what happened, naming the scancel an operator must run when it could not.
func (m *Manager) cancelVerified(ctx context.Context, info HandleInfo) string {
	cl := m.cfg.Client
	manual := fmt.Sprintf("verify and cancel it by hand: scancel %s", info.SlurmJobID)
	q, err := cl.Queue(ctx, []string{info.SlurmJobID})
	if err != nil {
		return fmt.Sprintf("not sent, ownership could not be verified (%v); %s", err, manual)
	}
	row, found, err := q.Lookup(info.SlurmJobID, info.JobName, m.marker(info), cl.UID)
	switch {
	case err != nil:
		return fmt.Sprintf("not sent (%v); %s", err, manual)
	case !found || isTerminal(row.State):
		return "not needed: the job is no longer in the queue"
	}
	if err := cl.Cancel(ctx, info.SlurmJobID); err != nil {
		return fmt.Sprintf("failed (%v); %s", err, manual)
	}
	return "scancel sent"
}

// cancelByIdentity cancels every queued job of this account with the given
// Slurm job name and comment marker (a job whose id sbatch did not tell
// us), each after its squeue row proved it ours. It says what happened.
func (m *Manager) cancelByIdentity(ctx context.Context, name, marker string) string {
	cl := m.cfg.Client
	manual := fmt.Sprintf("look for it with 'squeue --me --name=%s' and cancel it by hand", name)
	q, err := cl.QueueAll(ctx)
	if err != nil {
		return fmt.Sprintf("it could not be looked for (%v); %s", err, manual)
	}
	var cancelled, failed []string
	for _, r := range q.Rows {
		if r.Ambiguous || r.UID != cl.UID || r.Name != name || r.Comment != marker || isTerminal(r.State) {
			continue
		}
		if err := cl.Cancel(ctx, r.JobID); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", r.JobID, err))
			continue
		}
		cancelled = append(cancelled, r.JobID)
	}
	switch {
	case len(failed) > 0:
		return fmt.Sprintf("scancel failed for Slurm job(s) %s; %s", strings.Join(failed, ", "), manual)
	case len(cancelled) > 0:
		return "cancelled Slurm job(s) " + strings.Join(cancelled, ", ") + " found by its name and marker"
	}
	return "no queued job of its name and marker was found"
}

// marker is the Slurm comment this workspace's job of handle info must
// carry: this workspace's marker, not the one the handle recorded (a
// handle copied from another workspace must not match that workspace's
// job), except the legacy marker of a job launched before markers carried
// the workspace.
func (m *Manager) marker(info HandleInfo) string {
	return schema.ExpectedMarker(m.cfg.Workspace, info.JobID, info.Marker)
}

func (m *Manager) staleError(job Job) error {
	return withHint(fmt.Errorf("stale artifacts of job %s in %s prevent its relaunch; verify no allocation uses them before removal (flare-slurm gc)", job.JobID, job.Dir),
		fmt.Sprintf("run 'flare-slurm gc --workspace %s' to see whether the allocation ended, then add --yes to remove the dir", shell.Quote(m.cfg.Workspace)))
}

func (m *Manager) cleanup(dir string) {
	if err := removeJobDir(dir); err != nil {
		m.log.Error("cannot remove job artifacts after a failed launch", "dir", dir, "err", err)
	}
}

// ErrNoJob is returned by Open for a job id with neither a job dir nor a
// recorded result.
var ErrNoJob = errors.New("no such job in this workspace")

// Open returns the handle of a job launched by any process on this
// workspace, or of one that has already finished.
func (m *Manager) Open(jobID string) (*Handle, error) {
	m.mu.Lock()
	if h := m.handles[jobID]; h != nil {
		m.mu.Unlock()
		return h, nil
	}
	m.mu.Unlock()
	dir := m.JobDir(jobID)
	info, err := readHandle(dir)
	if err == nil {
		h := &Handle{m: m, info: info}
		m.mu.Lock()
		defer m.mu.Unlock()
		if prev := m.handles[jobID]; prev != nil {
			return prev, nil
		}
		m.handles[jobID] = h
		return h, nil
	}
	if !errors.Is(err, errNoHandle) {
		return nil, err
	}
	if _, serr := os.Lstat(dir); serr == nil {
		return nil, fmt.Errorf("job %s has artifacts in %s but no handle: its launch is in progress or crashed before the submission was recorded (see 'flare-slurm gc --workspace %s')", jobID, dir, shell.Quote(m.cfg.Workspace))
	}
	// The job dir is gone: the job may have finished.
	fin, err := m.recorded(context.Background(), jobID)
	if err != nil {
		return nil, err
	}
	if fin == nil {
		return nil, fmt.Errorf("job %s: %w", jobID, ErrNoJob)
	}
	h := &Handle{m: m, info: HandleInfo{JobID: jobID, SlurmJobID: fin.SlurmJobID}}
	h.done.Store(fin)
	return h, nil
}

// recorded is the result the observation cache records for jobID (nil:
// none), read under the workspace lock.
func (m *Manager) recorded(ctx context.Context, jobID string) (*Finished, error) {
	var fin *Finished
	err := m.obs.withLock(ctx, func(c *cache) (bool, error) {
		if f, ok := c.Finished[jobID]; ok {
			fin = &f
		}
		return false, nil
	})
	return fin, err
}

// liveHandles are this process's unfinished handles by Slurm job id.
func (m *Manager) liveHandles() map[string]*Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]*Handle, len(m.handles))
	for _, h := range m.handles {
		if h != nil && h.done.Load() == nil {
			out[h.info.SlurmJobID] = h
		}
	}
	return out
}

func (m *Manager) forget(h *Handle) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handles[h.info.JobID] == h {
		delete(m.handles, h.info.JobID)
	}
}

// ensureDir creates a control dir 0700, or checks an existing one: a real
// directory owned by uid, not accessible to group or others.
func ensureDir(path string, uid int) error {
	err := os.Mkdir(path, 0o700)
	if err == nil {
		return os.Chmod(path, 0o700)
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s must be a real directory, not a symlink or file", path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid {
		return fmt.Errorf("%s is owned by uid %d, not by the runtime account (uid %d): it may belong to another parent; fix its owner or prepare a new workspace", path, sys.Uid, uid)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %o: it must not be accessible to group or others (chmod 700)", path, st.Mode().Perm())
	}
	return nil
}
