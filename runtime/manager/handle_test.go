package manager

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

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
	if s := e.poll(h); !s.Terminal || s.ReturnCode != RCInfrastructure || s.State != stateLost {
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
	if s, _ := h.WaitReporting(e.deadline(), nil); !s.Terminal || s.ReturnCode != RCInfrastructure {
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
	if s, _ := h2.WaitReporting(e.deadline(), nil); !s.Terminal || s.ReturnCode != RCAborted {
		t.Fatalf("abort, then dir removed: %+v", s)
	}
}

// With a single watcher the result shows within one poll interval of the
// change, whatever the jitter (a wait never wakes while the shared
// observation is still fresh; it expires a twenty-fifth of an interval early).
func TestWaitSeesResultWithinOneInterval(t *testing.T) {
	for _, jit := range []float64{-1, -0.5, 0, 0.5, 1} {
		e := newEnv(t)
		e.m.cfg.Jitter = func() float64 { return jit }
		h := e.launch("j")
		e.slurm.set("101", "RUNNING", true, "")
		e.poll(h) // refreshed now
		changed := e.clock.Now()
		e.slurm.set("101", "COMPLETED", false, "0:0")
		s, err := h.WaitReporting(e.deadline(), nil)
		if err != nil || !s.Terminal || s.ReturnCode != 0 {
			t.Fatalf("jitter %v: %+v %v", jit, s, err)
		}
		if took := e.clock.Now().Sub(changed); took > 10*time.Second {
			t.Errorf("jitter %v: result after %v, want at most one poll interval (10s)", jit, took)
		}
	}
}

// A waiter that read another process's refresh wakes at most a fiftieth
// of an interval after that refresh expires (one interval less lead after it), whatever the jitter: it never
// sleeps a whole interval past it. (Sleeping one interval from its own
// poll, a wait that read a refresh 6 s old saw the result 16 s after the
// job ended, with ten jobs on the test cluster.)
func TestWaitWakesWhenAnotherProcesssRefreshExpires(t *testing.T) {
	for _, jit := range []float64{-1, -0.5, 0, 0.5, 1} {
		e := newEnv(t)
		e.m.cfg.Jitter = func() float64 { return jit }
		h := e.launch("j")
		e.slurm.set("101", "RUNNING", true, "")
		other, err := e.manager().Open("j")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(10 * time.Second)
		if _, err := other.Poll(context.Background()); err != nil { // the other process refreshes
			t.Fatal(err)
		}
		refreshed := e.clock.Now()
		e.clock.Advance(6200 * time.Millisecond)
		if s, err := h.Poll(context.Background()); err != nil || s.Terminal { // this one reads that refresh
			t.Fatalf("poll: %+v %v", s, err)
		}
		e.slurm.set("101", "COMPLETED", false, "0:0")
		s, err := h.WaitReporting(e.deadline(), nil)
		if err != nil || !s.Terminal {
			t.Fatalf("jitter %v: %+v %v", jit, s, err)
		}
		if at := e.clock.Now().Sub(refreshed); at < 9600*time.Millisecond || at > 9800*time.Millisecond {
			t.Errorf("jitter %v: result %v after the other process's refresh, want within [9.6s, 9.8s] (its expiry, one interval less a twenty-fifth, and the wake margin)", jit, at)
		}
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
