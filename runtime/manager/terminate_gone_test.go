package manager

import (
	"context"
	"errors"
	"testing"
)

// TestTerminateOutOfQueue: Terminate sends no scancel once the scheduler
// has answered that the job is no longer live in the queue (Observation.Gone,
// set where the answer is read; no detail text is inspected), and keeps the
// abort pending when the answer proves nothing.
func TestTerminateOutOfQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(*fakeSlurm)
		pending bool
	}{
		{"not in the queue, no accounting record yet", func(f *fakeSlurm) {
			j := f.jobs["101"]
			j.inQueue, j.inAcct = false, false
		}, false},
		{"not in the queue, accounting still says running", func(f *fakeSlurm) {
			j := f.jobs["101"]
			j.inQueue, j.state = false, "RUNNING"
		}, false},
		{"ended in the queue, no accounting record yet", func(f *fakeSlurm) {
			j := f.jobs["101"]
			j.state, j.inAcct = "FAILED", false
		}, false},
		{"accounting cannot be read", func(f *fakeSlurm) {
			j := f.jobs["101"]
			j.inQueue = false
			f.sacctFail = true
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := e.launch("j")
			e.slurm.mu.Lock()
			tc.set(e.slurm)
			e.slurm.mu.Unlock()
			_, err := h.Terminate(context.Background())
			if tc.pending != errors.Is(err, ErrCancelPending) || (!tc.pending && err != nil) {
				t.Fatalf("terminate: %v (want pending %v)", err, tc.pending)
			}
			if n := e.slurm.count("scancel"); n != 0 {
				t.Fatalf("scancel calls = %d for a job squeue does not list as live", n)
			}
			c, err := e.m.obs.read()
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := c.Jobs["101"]; !ok || o.Gone == tc.pending {
				t.Fatalf("observation %+v (in view %v): Gone should be %v", o, ok, !tc.pending)
			}
		})
	}
}
