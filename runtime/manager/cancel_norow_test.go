package manager

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Issue 9 item 17: scancel is sent only right after a squeue answer showed
// the job's own row (uid, name, marker). A squeue answer without the row
// means the job left the queue: never cancel then, whatever accounting
// says. Each call has a deadline, so a wrong implementation that waits
// fails here instead of hanging the package.

// TestTerminateWithoutQueueRowSendsNoScancel: the watched job is gone from
// the queue (accounting still says RUNNING) when the user aborts it.
func TestTerminateWithoutQueueRowSendsNoScancel(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "RUNNING", true, "")
	e.poll(h)
	e.slurm.set("101", "RUNNING", false, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _ = h.Terminate(ctx)
	for range 3 {
		e.clock.Advance(10 * time.Second)
		if _, err := h.Poll(ctx); err != nil && ctx.Err() != nil {
			t.Fatalf("poll after the deadline: %v", err)
		}
	}
	if n := e.slurm.count("scancel"); n != 0 {
		t.Fatalf("scancel sent %d time(s) for a job with no squeue row", n)
	}
	// Once the row is back, the recorded abort is carried out.
	e.slurm.set("101", "RUNNING", true, "")
	e.poll(h)
	if n := e.slurm.count("scancel"); n != 1 {
		t.Fatalf("scancel calls = %d after the row came back, want 1", n)
	}
}

// TestCancelVerifiedNeedsARow: a submitted job whose handle could not be
// written is cancelled only when squeue shows its row.
func TestCancelVerifiedNeedsARow(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.slurm.set("101", "RUNNING", false, "")
	if got := e.m.cancelVerified(ctx, h.info); !strings.HasPrefix(got, "not needed") {
		t.Errorf("no row: outcome %q, want not needed", got)
	}
	if n := e.slurm.count("scancel"); n != 0 {
		t.Fatalf("no row: scancel sent %d time(s)", n)
	}
	e.slurm.set("101", "RUNNING", true, "")
	if got := e.m.cancelVerified(ctx, h.info); got != "scancel sent" {
		t.Errorf("row shown: outcome %q, want scancel sent", got)
	}
	if n := e.slurm.count("scancel"); n != 1 {
		t.Fatalf("row shown: scancel calls = %d, want 1", n)
	}
}
