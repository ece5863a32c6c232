package manager

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRelaunchForgetsPreviousResult: after a job finished (its result is
// recorded) and was launched again, an operator removes the new run's job
// dir by hand. Another process opening the job must not report the first
// run's result for the second allocation (issue 9 item 11).
func TestRelaunchForgetsPreviousResult(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "COMPLETED", false, "0:0")
	if st, err := h.Wait(e.deadline()); err != nil || st.ReturnCode != 0 || st.SlurmJobID != "101" {
		t.Fatalf("first run: %+v %v", st, err)
	}
	h2 := e.launch("j")
	if h2.info.SlurmJobID != "102" {
		t.Fatalf("second run is Slurm job %s, want 102", h2.info.SlurmJobID)
	}
	if err := os.RemoveAll(e.m.JobDir("j")); err != nil {
		t.Fatal(err)
	}
	other := e.manager() // another process on the same workspace
	h3, err := other.Open("j")
	if err == nil {
		st, _ := h3.Poll(e.deadline())
		if st.SlurmJobID == "101" || st.Terminal {
			t.Fatalf("the second run (Slurm job 102) is reported with the first run's result: %+v", st)
		}
	} else if !errors.Is(err, ErrNoJob) {
		t.Fatalf("open: %v", err)
	}
}

// TestReadNoFollowRefusesFIFO: a control file swapped for a named pipe is
// refused at once instead of blocking the open (issue 9).
func TestReadNoFollowRefusesFIFO(t *testing.T) {
	p := t.TempDir() + "/handle.json"
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readNoFollow(p, 1<<20); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v, want not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readNoFollow blocked on a FIFO")
	}
}
