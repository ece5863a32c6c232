package manager

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// A job squeue still lists in a terminal state exists: while accounting
// has no record of it yet (slurmdbd catching up), those answers are not
// misses and never make it LOST.
func TestTerminalQueueRowWithoutRecordIsNotAMiss(t *testing.T) {
	t.Parallel()
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
		if s.Terminal || s.ReturnCode != rcUnknown {
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
	t.Parallel()
	e := newEnv(t)
	h := e.launch("j")
	e.poll(h)
	e.slurm.set("101", "COMPLETED", false, "0:0")
	e.m.writeCache = func(string, []byte, os.FileMode, ...renameio.Option) error { return errors.New("disk full") }
	e.clock.Advance(10 * time.Second)
	_, err := h.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("poll with an unwritable cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.m.JobDir("j"), handleFile)); err != nil {
		t.Fatalf("job dir removed although its result was not recorded: %v", err)
	}
	e.m.writeCache = renameio.WriteFile
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

// A cache that cannot be written (a full disk) does not turn every poll of
// a process into a refresh: one attempt per poll interval.
func TestUnwritableCacheKeepsOneRefreshPerInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.launch("j")
	e.m.writeCache = func(string, []byte, os.FileMode, ...renameio.Option) error { return errors.New("disk full") }
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

// A lock holder that stopped (an operator's ^Z on a status command in the
// middle of its refresh) cannot hang the watchers: waiting for the lock
// ends with the poll's context, and the poll reports an error (the job
// stays non-terminal) instead of blocking forever.
func TestLockWaitEndsWithContext(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	f, err := os.OpenFile(filepath.Join(e.ws, controlDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
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
	t.Parallel()
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

// TestPendingTimeoutClampedAtObserveTime (issue 25 item 15: a mutant
// without the clamp went unnoticed): a handle.json whose pending timeout
// is above the site's, or not positive (damaged, or copied from another
// workspace), is held to the site's value by every process that watches
// it, not only by the launch that wrote it.
func TestPendingTimeoutClampedAtObserveTime(t *testing.T) {
	for _, recorded := range []float64{1e9, 0, -5} {
		e := newEnv(t) // site pending timeout 600 s
		e.launch("j")
		path := filepath.Join(e.m.JobDir("j"), handleFile)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["pending_timeout"] = recorded
		data, _ = json.Marshal(doc)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := e.manager().Open("j") // another process reads the handle
		if err != nil {
			t.Fatal(err)
		}
		e.poll(h) // first pending observation
		e.clock.Advance(590 * time.Second)
		if _, err := h.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := e.slurm.count("scancel"); n != 0 {
			t.Errorf("recorded %v: cancelled %d time(s) before the site's 600 s", recorded, n)
		}
		e.clock.Advance(20 * time.Second)
		if _, err := h.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := e.slurm.count("scancel"); n != 1 {
			t.Errorf("recorded %v: scancel calls = %d after the site's 600 s, want 1", recorded, n)
		}
	}
}
