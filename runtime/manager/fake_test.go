package manager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

// fakeJob is one job of the stand-in scheduler.
type fakeJob struct {
	id, name, comment, user string
	uid                     int
	state                   string
	reason                  string // squeue %r; "" prints None
	exit, derived           string
	submit                  time.Time
	inQueue, inAcct         bool
}

// fakeSlurm is a stand-in scheduler behind the scheduler.Runner interface.
// It counts calls by command and can be told to fail.
type fakeSlurm struct {
	mu    sync.Mutex
	now   func() time.Time
	next  int
	jobs  map[string]*fakeJob
	calls map[string]int
	argvs [][]string

	squeueFail, sacctFail, sbatchFail bool
	sbatchReject                      string           // sbatch exits 1 with this stderr when set
	timeout                           bool             // every query times out
	sbatchOut                         string           // overrides the id line when set
	sbatchHook                        func(*fakeJob)   // changes each submitted job
	sbatchLate                        scheduler.Result // when ExitCode or TimedOut is set: sbatch prints the id and then fails so
	squeueExtra                       string           // rows appended to every squeue answer
	sacctExtra                        string
	// queryTakes is how long each squeue and sacct takes on the fake
	// clock (advance moves it); the answer is the state at the call.
	queryTakes time.Duration
	advance    func(time.Duration)
	// squeueAt is when each squeue started, on the fake clock.
	squeueAt []time.Time
}

// squeueReason is the job's %r as squeue prints it.
func (j *fakeJob) squeueReason() string {
	if j.reason == "" {
		return "None"
	}
	return j.reason
}

func newFakeSlurm(now func() time.Time) *fakeSlurm {
	return &fakeSlurm{now: now, next: 100, jobs: map[string]*fakeJob{}, calls: map[string]int{}}
}

func (f *fakeSlurm) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cmd]
}

func (f *fakeSlurm) job(id string) *fakeJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jobs[id]
}

// set changes a job: state, and whether squeue still lists it.
func (f *fakeSlurm) set(id, state string, inQueue bool, exit string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[id]
	j.state, j.inQueue = state, inQueue
	if exit != "" {
		j.exit = exit
	}
}

func flagValue(argv []string, name string) string {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func (f *fakeSlurm) Run(ctx context.Context, c scheduler.Command) scheduler.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := filepath.Base(c.Argv[0])
	f.calls[cmd]++
	if cmd == "squeue" {
		f.squeueAt = append(f.squeueAt, f.now())
	}
	f.argvs = append(f.argvs, c.Argv)
	fail := scheduler.Result{ExitCode: 1, Stderr: cmd + ": error: Unable to contact slurm controller (connect failure)"}
	var out strings.Builder
	if f.timeout && cmd != "sbatch" {
		return scheduler.Result{ExitCode: -1, TimedOut: true}
	}
	if f.queryTakes > 0 && (cmd == "squeue" || cmd == "sacct") {
		f.advance(f.queryTakes)
	}
	switch cmd {
	case "sbatch":
		if f.sbatchFail {
			return fail
		}
		if f.sbatchReject != "" {
			return scheduler.Result{ExitCode: 1, Stderr: f.sbatchReject}
		}
		f.next++
		id := fmt.Sprint(f.next)
		f.jobs[id] = &fakeJob{id: id, name: flagValue(c.Argv, "--job-name"), comment: flagValue(c.Argv, "--comment"),
			uid: 1000, user: "alice", state: "PENDING", exit: "0:0", derived: "0:0", submit: f.now(), inQueue: true, inAcct: true}
		if f.sbatchHook != nil {
			f.sbatchHook(f.jobs[id])
		}
		if ctx.Err() != nil {
			// Interrupted after slurmctld took the job: killed, no answer.
			return scheduler.Result{ExitCode: -1, Stderr: "sbatch: killed"}
		}
		if f.sbatchOut != "" {
			return scheduler.Result{Stdout: []byte(strings.ReplaceAll(f.sbatchOut, "ID", id))}
		}
		if late := f.sbatchLate; late.ExitCode != 0 || late.TimedOut {
			late.Stdout = []byte(id + "\n")
			return late
		}
		fmt.Fprintln(&out, id)
	case "squeue":
		if f.squeueFail {
			return fail
		}
		ids := strings.Split(flagValue(c.Argv, "--jobs"), ",")
		known := 0
		for _, id := range ids {
			if j := f.jobs[id]; j != nil && j.inQueue {
				known++
				fmt.Fprintf(&out, "%s|%s|%d|%s|%s|%s\n", j.id, j.state, j.uid, j.comment, j.name, j.squeueReason())
			}
		}
		if flagValue(c.Argv, "--jobs") == "" {
			for _, j := range f.sortedJobs() {
				if j.inQueue {
					fmt.Fprintf(&out, "%s|%s|%d|%s|%s|%s\n", j.id, j.state, j.uid, j.comment, j.name, j.squeueReason())
				}
			}
		} else if known == 0 && len(ids) == 1 {
			return scheduler.Result{ExitCode: 1, Stderr: "slurm_load_jobs error: Invalid job id specified\n"}
		}
		out.WriteString(f.squeueExtra)
	case "sacct":
		if f.sacctFail {
			return fail
		}
		for _, id := range strings.Split(flagValue(c.Argv, "--jobs"), ",") {
			if j := f.jobs[id]; j != nil && j.inAcct {
				fmt.Fprintf(&out, "%s|%s|%s|%s|%s|%s|%s\n", j.id, j.name, j.user, j.state, j.exit, j.derived, j.submit.Local().Format("2006-01-02T15:04:05"))
			}
		}
		out.WriteString(f.sacctExtra)
	case "scancel":
		id := c.Argv[len(c.Argv)-1]
		if j := f.jobs[id]; j != nil && j.inQueue {
			j.state, j.inQueue, j.exit = "CANCELLED", false, "0:15"
		}
	default:
		return scheduler.Result{ExitCode: 127, Stderr: "unknown command"}
	}
	return scheduler.Result{Stdout: []byte(out.String())}
}

func (f *fakeSlurm) sortedJobs() []*fakeJob {
	var js []*fakeJob
	for _, j := range f.jobs {
		js = append(js, j)
	}
	slices.SortFunc(js, func(a, b *fakeJob) int { return cmpID(a.id, b.id) })
	return js
}

// clock is a fake wall clock that Sleep advances.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

// env is one test workspace with a fake clock and scheduler.
type env struct {
	t     testing.TB
	ws    string
	clock *clock
	slurm *fakeSlurm
	m     *Manager
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ws := t.TempDir()
	for _, d := range []string{"startup", "local"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ws: ws, clock: &clock{t: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)}}
	e.slurm = newFakeSlurm(e.clock.Now)
	e.slurm.advance = e.clock.Advance
	e.m = e.manager()
	return e
}

// manager opens another Manager on the same workspace and scheduler, as a
// separate process would.
func (e *env) manager() *Manager {
	e.t.Helper()
	cl := scheduler.New(scheduler.Paths{Sbatch: "/s/sbatch", Squeue: "/s/squeue", Sacct: "/s/sacct", Scancel: "/s/scancel"},
		1000, "alice", nil, scheduler.Timeouts{Submit: time.Second, Query: time.Second, Cancel: time.Second}, e.slurm)
	m, err := New(Config{Workspace: e.ws, Client: cl, PollInterval: 10 * time.Second, PendingTimeout: 600 * time.Second,
		Now: e.clock.Now, Sleep: e.clock.Sleep, Jitter: func() float64 { return 0 }})
	if err != nil {
		e.t.Fatal(err)
	}
	m.noSync = true // the fsync of handle.json only slows the unit tier
	return m
}

// job builds a compiled job whose Write creates the dir with a batch script.
func (e *env) job(m *Manager, jobID string) Job {
	dir := m.JobDir(jobID)
	key := schema.JobKey(jobID)
	name := "nvfl-site-1-" + key[:8]
	return Job{
		JobID: jobID, Dir: dir, Name: name, Marker: "nvfl:" + jobID,
		Argv:           []string{"sbatch", "--parsable", "--job-name=" + name, "--comment=nvfl:" + jobID, dir + "/batch.sh"},
		Env:            []string{"LC_ALL=C"},
		PendingTimeout: 600 * time.Second,
		Write: func() error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "batch.sh"), []byte("#!/bin/bash\n"), 0o700)
		},
	}
}

func (e *env) launch(jobID string) *Handle {
	e.t.Helper()
	h, err := e.m.Launch(context.Background(), e.job(e.m, jobID))
	if err != nil {
		e.t.Fatalf("launch %s: %v", jobID, err)
	}
	return h
}

// poll advances the clock by one poll interval and polls h.
func (e *env) poll(h *Handle) Status {
	e.t.Helper()
	e.clock.Advance(10 * time.Second)
	st, err := h.Poll(context.Background())
	if err != nil {
		e.t.Fatalf("poll: %v", err)
	}
	return st
}

// deadline is the context of a Wait or Poll in a test: a wrong
// implementation that never ends fails its test after 30 s instead of
// hanging the package (issue 9 item 18).
func (e *env) deadline() context.Context {
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}
