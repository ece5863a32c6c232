package manager

import (
	"context"
	"errors"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A job squeue still lists in a terminal state exists: while accounting
// has no record of it yet (slurmdbd catching up), those answers are not
// misses and never make it LOST.
func TestTerminalQueueRowWithoutRecordIsNotAMiss(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "RUNNING", true, "")
	e.poll(h)
	j := e.slurm.job("101")
	e.slurm.mu.Lock()
	j.state, j.exit, j.inAcct = "COMPLETED", "0:0", false
	e.slurm.mu.Unlock()
	for i := 0; i < 12; i++ {
		s := e.poll(h)
		if s.Terminal || s.ReturnCode != RCUnknown {
			t.Fatalf("poll %d: terminal while squeue lists the job: %+v", i, s)
		}
		if !strings.Contains(s.Detail, "waiting for its accounting record") {
			t.Fatalf("poll %d: detail %q", i, s.Detail)
		}
	}
	if tm, _ := readTimers(e.m.JobDir("j")); tm.Misses != 0 {
		t.Fatalf("misses = %d, want 0", tm.Misses)
	}
	// Nothing to scancel for a job that has ended in the queue.
	if _, err := h.Terminate(context.Background()); err != nil {
		t.Fatalf("terminate of a job that ended in the queue: %v", err)
	}
	if n := e.slurm.count("scancel"); n != 0 {
		t.Fatalf("scancel calls = %d", n)
	}
	e.slurm.mu.Lock()
	j.inAcct, j.inQueue = true, false
	e.slurm.mu.Unlock()
	if s := e.poll(h); !s.Terminal || s.ReturnCode != RCAborted {
		t.Fatalf("record arrived (after an abort): %+v", s)
	}
}

// The result is recorded in the shared cache before the job dir goes: if
// the cache cannot be written, the job dir (and so the job) stays, and the
// next refresh records the result.
func TestJobDirOutlivesAnUnrecordedResult(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.poll(h)
	e.slurm.set("101", "COMPLETED", false, "0:0")
	writeCacheFile = func(string, []byte, os.FileMode) error { return errors.New("disk full") }
	t.Cleanup(func() { writeCacheFile = writeCacheFileDefault })
	e.clock.Advance(10 * time.Second)
	_, err := h.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("poll with an unwritable cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.m.JobDir("j"), HandleFile)); err != nil {
		t.Fatalf("job dir removed although its result was not recorded: %v", err)
	}
	writeCacheFile = writeCacheFileDefault
	other := e.manager()
	h2, err := other.Open("j")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := h2.Poll(context.Background()); err != nil || !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("next refresh: %+v %v", s, err)
	}
	if _, err := os.Stat(e.m.JobDir("j")); !os.IsNotExist(err) {
		t.Fatalf("job dir left after the result was recorded: %v", err)
	}
	h3, err := e.manager().Open("j")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := h3.Poll(context.Background()); !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("reopened: %+v", s)
	}
}

// A handle whose job dir was deleted by hand keeps its clocks in memory:
// the five-miss rule still ends it (not an eternal 127), never earlier.
func TestHandleWithoutJobDirFiveMisses(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.poll(h)
	if err := os.RemoveAll(e.m.JobDir("j")); err != nil {
		t.Fatal(err)
	}
	j := e.slurm.job("101")
	e.slurm.mu.Lock()
	j.inQueue, j.inAcct = false, false
	e.slurm.mu.Unlock()
	for i := 0; i < 4; i++ {
		if s := e.poll(h); s.Terminal {
			t.Fatalf("miss %d: terminal early: %+v", i+1, s)
		}
	}
	if s := e.poll(h); !s.Terminal || s.ReturnCode != RCInfrastructure || s.State != StateLost {
		t.Fatalf("fifth miss: %+v", s)
	}
}

// The pending timer and a recorded user abort of a handle survive the
// removal of its job dir.
func TestHandleWithoutJobDirKeepsTimers(t *testing.T) {
	e := newEnv(t)
	job := e.job(e.m, "j")
	job.PendingTimeout = 30 * time.Second
	h, err := e.m.Launch(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	e.poll(h) // pending from 10 s
	if err := os.RemoveAll(e.m.JobDir("j")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		e.poll(h)
	}
	if n := e.slurm.count("scancel"); n != 0 {
		t.Fatalf("scancel before the pending timeout: %d", n)
	}
	e.poll(h) // 40 s
	if n := e.slurm.count("scancel"); n != 1 {
		t.Fatalf("scancel calls = %d after the pending timeout, want 1", n)
	}
	if s, _ := h.Wait(e.deadline()); !s.Terminal || s.ReturnCode != RCInfrastructure {
		t.Fatalf("pending timeout: %+v", s)
	}

	// A user abort recorded before the dir vanished still maps to 9.
	e2 := newEnv(t)
	h2 := e2.launch("k")
	e2.slurm.set("101", "RUNNING", true, "")
	e2.poll(h2)
	e2.slurm.squeueFail = true
	if _, err := h2.Terminate(context.Background()); !errors.Is(err, ErrCancelPending) {
		t.Fatalf("terminate: %v", err)
	}
	if err := os.RemoveAll(e2.m.JobDir("k")); err != nil {
		t.Fatal(err)
	}
	e2.slurm.squeueFail = false
	if s, _ := h2.Wait(e.deadline()); !s.Terminal || s.ReturnCode != RCAborted {
		t.Fatalf("abort, then dir removed: %+v", s)
	}
}

// With a single watcher the result shows within 1.1 poll intervals of the
// change, whatever the jitter (a wait never wakes while the shared
// observation is still fresh).
func TestWaitSeesResultWithinOneInterval(t *testing.T) {
	for _, jit := range []float64{-1, -0.5, 0, 0.5, 1} {
		e := newEnv(t)
		e.m.cfg.Jitter = func() float64 { return jit }
		h := e.launch("j")
		e.slurm.set("101", "RUNNING", true, "")
		e.poll(h) // refreshed now
		changed := e.clock.Now()
		e.slurm.set("101", "COMPLETED", false, "0:0")
		s, err := h.Wait(e.deadline())
		if err != nil || !s.Terminal || s.ReturnCode != 0 {
			t.Fatalf("jitter %v: %+v %v", jit, s, err)
		}
		if took := e.clock.Now().Sub(changed); took > 11*time.Second {
			t.Errorf("jitter %v: result after %v, want at most 11s", jit, took)
		}
	}
}

// A job dir without a handle that is younger than a launch can take may
// belong to a launch in progress in another process: gc keeps it.
func TestGCKeepsYoungHandlelessDir(t *testing.T) {
	e := newEnv(t)
	dir := e.m.JobDir("launching")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	os.Chtimes(dir, now.Add(-2*time.Second), now.Add(-2*time.Second))
	entries, err := e.m.GC(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Removed || entries[0].Verdict != GCUnknown || !strings.Contains(entries[0].Reason, "launch") {
		t.Fatalf("young dir: %+v", entries)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("young handleless dir removed: %v", err)
	}
	old := now.Add(-10 * time.Minute)
	os.Chtimes(dir, old, old)
	entries, _ = e.m.GC(context.Background(), true)
	if len(entries) != 1 || !entries[0].Removed {
		t.Fatalf("old dir: %+v", entries)
	}
}

// When handle.json cannot be written after sbatch accepted the job, the
// job is cancelled only once squeue proves the row is ours (uid, comment,
// name), like every other scancel.
func TestHandleWriteFailureCancelsOnlyAVerifiedJob(t *testing.T) {
	for _, c := range []struct {
		name       string
		comment    string
		squeueFail bool
		scancels   int
	}{
		{"verified", "", false, 1},
		{"foreign row", "nvfl:someone-else", false, 0},
		{"squeue down", "", true, 0},
	} {
		e := newEnv(t)
		job := e.job(e.m, "j")
		write := job.Write
		job.Write = func() error {
			if err := write(); err != nil {
				return err
			}
			// handle.json cannot be created: a directory holds its name.
			return os.Mkdir(filepath.Join(job.Dir, HandleFile), 0o700)
		}
		e.slurm.squeueFail = c.squeueFail
		if c.comment != "" {
			e.slurm.sbatchHook = func(j *fakeJob) { j.comment = c.comment }
		}
		_, err := e.m.Launch(context.Background(), job)
		if err == nil || !strings.Contains(err.Error(), "record handle") {
			t.Fatalf("%s: launch: %v", c.name, err)
		}
		if n := e.slurm.count("scancel"); n != c.scancels {
			t.Errorf("%s: scancel calls = %d, want %d", c.name, n, c.scancels)
		}
		if c.scancels == 0 && !strings.Contains(err.Error(), "scancel "+"101") {
			t.Errorf("%s: the error does not tell the operator what to cancel: %v", c.name, err)
		}
		if _, serr := os.Stat(job.Dir); !os.IsNotExist(serr) {
			t.Errorf("%s: job dir left behind", c.name)
		}
	}
}

// The control dirs must belong to the runtime account, like the workspace.
func TestControlDirsOwnerAndMode(t *testing.T) {
	e := newEnv(t)
	jobs := e.m.JobsDir()
	if err := ensureDir(jobs, os.Getuid()); err != nil {
		t.Fatalf("own dir: %v", err)
	}
	if err := ensureDir(jobs, os.Getuid()+1); err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Fatalf("foreign owner: %v", err)
	}
	os.Chmod(jobs, 0o750)
	if err := ensureDir(jobs, os.Getuid()); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("group bits: %v", err)
	}
	os.Chmod(jobs, 0o700)
	link := filepath.Join(e.ws, "link")
	os.Symlink(jobs, link)
	if err := ensureDir(link, os.Getuid()); err == nil || !strings.Contains(err.Error(), "real directory") {
		t.Fatalf("symlink: %v", err)
	}
}

// A cache that cannot be written (a full disk) does not turn every poll of
// a process into a refresh: one attempt per poll interval.
func TestUnwritableCacheKeepsOneRefreshPerInterval(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	writeCacheFile = func(string, []byte, os.FileMode) error { return errors.New("disk full") }
	t.Cleanup(func() { writeCacheFile = writeCacheFileDefault })
	for i := 0; i < 10; i++ {
		e.clock.Advance(time.Second)
		if s, err := h.Poll(context.Background()); err == nil || s.Terminal {
			t.Fatalf("poll %d: %+v %v", i, s, err)
		}
	}
	if n := e.slurm.count("squeue"); n != 1 {
		t.Fatalf("squeue calls = %d in 10 s with an unwritable cache, want 1", n)
	}
	e.clock.Advance(time.Second)
	h.Poll(context.Background())
	if n := e.slurm.count("squeue"); n != 2 {
		t.Fatalf("squeue calls = %d after one interval, want 2", n)
	}
}

// A handle whose dir was removed by hand, held by one process while
// another keeps the shared observation fresh, is still asked about (its
// process refreshes for it) and reaches its result.
func TestOrphanedHandleInAnotherProcess(t *testing.T) {
	e := newEnv(t)
	other := e.launch("other") // 101, watched by this "process"
	e.slurm.set("101", "RUNNING", true, "")
	mb := e.manager()
	hb, err := mb.Launch(context.Background(), e.job(mb, "mine")) // 102
	if err != nil {
		t.Fatal(err)
	}
	e.poll(hb)
	os.RemoveAll(mb.JobDir("mine"))
	e.slurm.set("102", "FAILED", false, "103:0")
	for i := 0; i < 3; i++ {
		e.clock.Advance(10 * time.Second)
		other.Poll(context.Background()) // refreshes first every interval
		e.clock.Advance(100 * time.Millisecond)
		if s, _ := hb.Poll(context.Background()); s.Terminal {
			if s.ReturnCode != 103 {
				t.Fatalf("result %+v", s)
			}
			return
		}
	}
	t.Fatal("the orphaned handle was never asked about while another process refreshed")
}

// A lock holder that stopped (an operator's ^Z on a status command in the
// middle of its refresh) cannot hang the watchers: waiting for the lock
// ends with the poll's context, and the poll reports an error (the job
// stays non-terminal) instead of blocking forever.
func TestLockWaitEndsWithContext(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	f, err := os.OpenFile(filepath.Join(e.ws, ControlDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		e.clock.Advance(10 * time.Second)
		s, err := h.Poll(ctx)
		if s.Terminal {
			err = errors.New("terminal while the lock was held")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("poll succeeded without the lock")
		}
	case <-time.After(5 * time.Second):
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		t.Fatal("poll still blocked on the workspace lock after its context ended")
	}
}

// A job's pending timeout may only lower the site's: zero or a larger
// value falls back to the site value instead of cancelling at once (or
// never).
func TestPendingTimeoutBoundedBySite(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, time.Hour} {
		e := newEnv(t) // site pending timeout 600 s
		job := e.job(e.m, "j")
		job.PendingTimeout = d
		h, err := e.m.Launch(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Info().PendingTimeout; got != 600 {
			t.Errorf("job value %v: recorded pending timeout %v, want the site's 600", d, got)
		}
		e.poll(h)
		e.poll(h)
		if n := e.slurm.count("scancel"); n != 0 {
			t.Errorf("job value %v: cancelled after 20 s of pending", d)
		}
	}
}
