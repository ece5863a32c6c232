package manager

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
)

// sbatch that prints a job id and then exits non-zero (or is killed at its
// timeout) has still submitted the job: it is tracked like any other, with
// a warning naming the id, never reported as "not launched" (issue 15
// item 6). Without an id on stdout the launch still fails and removes its
// job dir.
func TestSbatchPrintedIDThenFailedIsTracked(t *testing.T) {
	for _, c := range []struct {
		name string
		late scheduler.Result
	}{
		{"exit 1", scheduler.Result{ExitCode: 1, Stderr: "sbatch: error: slurm_persist_conn_open: failed to send persistent connection init message"}},
		{"timeout", scheduler.Result{ExitCode: -1, TimedOut: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var logs bytes.Buffer
			e.m.log = slog.New(slog.NewTextHandler(&logs, nil))
			e.slurm.sbatchLate = c.late
			h, err := e.m.Launch(context.Background(), e.job(e.m, "j"))
			if err != nil {
				t.Fatalf("launch: %v; the job exists in Slurm and must be tracked", err)
			}
			if h.Info().SlurmJobID != "101" {
				t.Fatalf("handle %+v, want Slurm job 101", h.Info())
			}
			if e.slurm.job("101") == nil {
				t.Fatal("the fake did not create the job")
			}
			// Another process sees the handle: the job is watched, not lost.
			m2 := e.manager()
			h2, err := m2.Open("j")
			if err != nil || h2.Info().SlurmJobID != "101" {
				t.Fatalf("open from another manager: %v %+v", err, h2)
			}
			if e.slurm.count("scancel") != 0 {
				t.Error("a tracked job was cancelled")
			}
			if !strings.Contains(logs.String(), "slurm_job_id=101") || !strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("no warning naming the job id:\n%s", logs.String())
			}
		})
	}
	// Without an id the failure stands.
	e := newEnv(t)
	e.slurm.sbatchFail = true
	if _, err := e.m.Launch(context.Background(), e.job(e.m, "j")); err == nil || !strings.Contains(err.Error(), "not launched") {
		t.Fatalf("sbatch without an id: %v", err)
	}
}

// TestLaunchNotInterruptedBetweenSubmitAndHandle (issue 25 item 11): a
// launch whose context ends while sbatch runs (the bridge gave up, a
// signal) killed sbatch after Slurm took the job: the job was queued with
// live credentials and no handle, and its relaunch was refused as stale.
// From the submission on the launch is not interrupted: the job gets its
// handle. A context that ended before the submission submits nothing.
func TestLaunchNotInterruptedBetweenSubmitAndHandle(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	e.slurm.sbatchHook = func(*fakeJob) { cancel() }
	h, err := e.m.Launch(ctx, e.job(e.m, "j"))
	if err != nil {
		t.Fatalf("launch interrupted during sbatch: %v", err)
	}
	if h.Info().SlurmJobID != "101" {
		t.Errorf("handle %+v", h.Info())
	}
	if _, err := readHandle(e.m.JobDir("j")); err != nil {
		t.Errorf("no handle.json for the submitted job: %v", err)
	}

	e.slurm.sbatchHook = nil
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := e.m.Launch(ctx, e.job(e.m, "k")); err == nil || !strings.Contains(err.Error(), "interrupted before it was submitted; nothing was launched") {
		t.Errorf("launch with an ended context: %v", err)
	}
	if n := e.slurm.count("sbatch"); n != 1 {
		t.Errorf("sbatch calls = %d, want 1", n)
	}
	if _, err := os.Lstat(e.m.JobDir("k")); !os.IsNotExist(err) {
		t.Errorf("job dir of the interrupted launch left: %v", err)
	}
}
