package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// TestPendingReasonOnCluster: a job Slurm keeps pending says why, as Slurm
// says it (squeue %r), in status and on wait's stderr each time the reason
// changes (issue 28 item 10): first the reason the blocker gives it
// (Resources or Priority), then JobHeldAdmin once root holds it.
func TestPendingReasonOnCluster(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	s := newSite(t, c, siteOpts{})
	blocker(t, c, s.base)
	req, _ := s.job("job-why", "exit 0", nil)
	l := s.launch(req)
	first := s.until("job-why", 60*time.Second, "a pending reason", func(st status) bool { return st.State == "PENDING" && st.Reason != "" })
	slurmSays := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", l.SlurmJobID, "-o", "%r"))
	if first.Reason != slurmSays || first.PendingSince == "" || first.PendingTimeout != 600 {
		t.Fatalf("status %+v; squeue says %q", first, slurmSays)
	}
	text, _, code := s.run(context.Background(), "status", "--workspace", s.ws, "--job-id", "job-why")
	if code != 0 || !strings.Contains(text, "pending timeout; Slurm's reason: "+first.Reason) {
		t.Errorf("status text (exit %d):\n%s", code, text)
	}

	// wait reports the reason, and its change, while it waits.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, errs, code := s.run(ctx, "wait", "--workspace", s.ws, "--job-id", "job-why")
		done <- result{errs, code}
	}()
	c.RunRoot(t, "scontrol", "hold", l.SlurmJobID)
	s.until("job-why", 60*time.Second, "JobHeldAdmin", func(st status) bool { return st.Reason == "JobHeldAdmin" })
	// let wait see the new reason (one poll interval), then end the job
	time.Sleep(3 * time.Second)
	if _, errs, code := s.run(context.Background(), "cancel", "--workspace", s.ws, "--job-id", "job-why"); code != 0 {
		t.Fatalf("cancel: %s", errs)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("wait did not end after the job was cancelled")
	}
	if r.code != 9 {
		t.Errorf("wait exit %d, want 9 (aborted)", r.code)
	}
	for _, want := range []string{"Slurm's reason: " + first.Reason, "Slurm's reason: JobHeldAdmin (an administrator holds it)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("wait's stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}
