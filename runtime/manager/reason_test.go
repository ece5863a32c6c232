package manager

import (
	"strings"
	"testing"
	"time"
)

// TestPendingSaysWhy: a pending job's status carries Slurm's reason, since
// when it is pending and the pending timeout that will cancel it, for
// every process on the workspace (issue 28 item 10); a running job carries
// none.
func TestPendingSaysWhy(t *testing.T) {
	e := newEnv(t)
	job := e.job(e.m, "j")
	job.PendingTimeout = 300 * time.Second
	h, err := e.m.Launch(e.deadline(), job)
	if err != nil {
		t.Fatal(err)
	}
	e.slurm.job("101").reason = "Priority"
	first := e.poll(h)
	if first.State != "PENDING" || first.Reason != "Priority" || first.PendingTimeout != 300 || first.PendingSince.IsZero() {
		t.Fatalf("first pending poll: %+v", first)
	}
	e.slurm.job("101").reason = "QOSMaxJobsPerUser"
	st := e.poll(h)
	if st.Reason != "QOSMaxJobsPerUser" || !st.PendingSince.Equal(first.PendingSince) {
		t.Fatalf("second poll: %+v (pending since %v)", st, first.PendingSince)
	}
	// Another process reads the same from the shared observation.
	other, err := e.manager().Open("j")
	if err != nil {
		t.Fatal(err)
	}
	ost, err := other.Poll(e.deadline())
	if err != nil || ost.Reason != "QOSMaxJobsPerUser" || !ost.PendingSince.Equal(first.PendingSince) || ost.PendingTimeout != 300 {
		t.Fatalf("other process: %+v %v", ost, err)
	}
	text := st.Pending(e.clock.Now())
	want := "pending for 10s of its 5m0s pending timeout; Slurm's reason: QOSMaxJobsPerUser (the account already runs the most jobs its QOS allows)"
	if text != want {
		t.Errorf("Pending() = %q\nwant %q", text, want)
	}
	e.slurm.job("101").reason = ""
	if got := e.poll(h).Pending(e.clock.Now()); !strings.HasSuffix(got, "; Slurm gives no reason") {
		t.Errorf("no reason: %q", got)
	}
	e.slurm.set("101", "RUNNING", true, "")
	if st := e.poll(h); st.Reason != "" || !st.PendingSince.IsZero() || st.Pending(e.clock.Now()) != "" {
		t.Errorf("running: %+v", st)
	}
}
