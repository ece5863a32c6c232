package integration

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// TestSuccessSecretsAndCleanup, per sandbox (the real apptainer and pyxis
// included): a worker exiting 0 → 0; the secret reaches the worker's
// environment only through the secret file, which is gone (on the host)
// when the worker runs; no secret in batch.sh or in sbatch's argv and
// environment, nor in the job's output; the job dir is removed at the end.
func TestSuccessSecretsAndCleanup(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, func(t *testing.T, sandbox string) {
		c := slurmtest.Require(t)
		s := newSite(t, c, siteOpts{sandbox: sandbox})
		req, token := s.job("job-ok", holdUntilRelease+"\nexit 0", nil)
		l := s.launch(req)
		batch := s.read(path.Join(l.JobDir, "batch.sh"))
		if strings.Contains(batch, token) {
			t.Fatal("the secret is in batch.sh")
		}
		if !strings.Contains(s.read(path.Join(l.JobDir, "secret.env")), token) {
			t.Fatal("the secret is not in secret.env")
		}
		ents, _ := os.ReadDir(s.c.HostPath(s.tools))
		seen := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "sbatch-argv.") || strings.HasPrefix(e.Name(), "sbatch-env.") {
				seen++
				if strings.Contains(s.read(path.Join(s.tools, e.Name())), token) {
					t.Fatalf("the secret reached sbatch's %s", e.Name())
				}
			}
		}
		if seen != 2 {
			t.Fatalf("sbatch recorder files = %d, want 2", seen)
		}
		// The worker records what it saw first, then holds: once that file
		// is there the worker runs, and the secret file must be gone.
		seenFile := path.Join(s.ws, "job-ok", "worker-seen.txt")
		s.until("job-ok", 2*time.Minute, "the worker to start", func(st status) bool { return s.exists(seenFile) || st.Terminal })
		if s.exists(path.Join(l.JobDir, "secret.env")) {
			t.Fatal("secret.env exists on the host while the worker runs")
		}
		s.release("job-ok")
		st := s.wait("job-ok", 2*time.Minute)
		if st.ReturnCode != 0 || st.State != "COMPLETED" || st.SlurmJobID != l.SlurmJobID {
			t.Fatalf("result %+v\n%s", st, s.slurmOut("job-ok", l.SlurmJobID))
		}
		seenByWorker := s.read(seenFile)
		if !strings.Contains(seenByWorker, "secret_file=gone\n") {
			t.Fatalf("the secret file still existed when the worker started:\n%s", seenByWorker)
		}
		if !strings.Contains(seenByWorker, "NVFLARE_JOB_AUTH_TOKEN="+token+"\n") {
			t.Fatalf("the secret is not in the worker's environment:\n%s", seenByWorker)
		}
		if n := strings.Count(seenByWorker, token); n != 1 {
			t.Fatalf("the secret is in %d places of the worker's environment, want 1 (NVFLARE_JOB_AUTH_TOKEN):\n%s", n, seenByWorker)
		}
		if strings.Contains(s.slurmOut("job-ok", l.SlurmJobID), token) {
			t.Fatal("the secret is in the job's output")
		}
		if s.exists(l.JobDir) {
			t.Fatal("job dir left behind after the end")
		}
	})
}

// TestWorkerExitCodes, per sandbox: worker exit 1 → 1, 103 → 103.
func TestWorkerExitCodes(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, func(t *testing.T, sandbox string) {
		c := slurmtest.Require(t)
		s := newSite(t, c, siteOpts{sandbox: sandbox})
		for _, code := range []int{1, 103} {
			id := fmt.Sprintf("job-exit-%d", code)
			req, _ := s.job(id, fmt.Sprintf("exit %d", code), nil)
			s.launch(req)
		}
		for _, code := range []int{1, 103} {
			st := s.wait(fmt.Sprintf("job-exit-%d", code), 2*time.Minute)
			if st.ReturnCode != code || st.State != "FAILED" {
				t.Errorf("exit %d: %+v\n%s", code, st, s.slurmOut(fmt.Sprintf("job-exit-%d", code), st.SlurmJobID))
			}
		}
	})
}

// TestWallTimeLimit, per sandbox: a job over its time limit ends TIMEOUT →
// 104 (Slurm signals the container's processes too).
func TestWallTimeLimit(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, func(t *testing.T, sandbox string) {
		c := slurmtest.Require(t)
		s := newSite(t, c, siteOpts{sandbox: sandbox})
		meta := map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"time": "00:01:00"}}}}
		req, _ := s.job("job-timeout", "sleep 600", meta)
		s.launch(req)
		st := s.wait("job-timeout", 4*time.Minute)
		if st.ReturnCode != 104 || st.State != "TIMEOUT" {
			t.Fatalf("result %+v", st)
		}
	})
}

// TestUserAbortRunning, per sandbox: cancel of a running job from another
// process → 9.
func TestUserAbortRunning(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, func(t *testing.T, sandbox string) {
		c := slurmtest.Require(t)
		s := newSite(t, c, siteOpts{sandbox: sandbox})
		req, _ := s.job("job-abort-run", holdUntilRelease, nil)
		s.launch(req)
		seenFile := path.Join(s.ws, "job-abort-run", "worker-seen.txt")
		s.until("job-abort-run", 2*time.Minute, "the worker to start", func(st status) bool { return s.exists(seenFile) || st.Terminal })
		out, errs, code := s.run(context.Background(), "cancel", "--workspace", s.ws, "--job-id", "job-abort-run")
		if code != 0 {
			t.Fatalf("cancel exit %d: %s %s", code, out, errs)
		}
		if st := s.wait("job-abort-run", 2*time.Minute); st.ReturnCode != 9 {
			t.Fatalf("result %+v", st)
		}
	})
}

// TestLeftoverDirAndGC: a job whose launcher went away leaves its job dir;
// it blocks a relaunch (a duplicate launch of a live job id is refused),
// gc keeps it while the allocation runs and removes it once it finished,
// and the id can then be launched again.
func TestLeftoverDirAndGC(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{})
	req, _ := s.job("job-left", holdUntilRelease, nil)
	l := s.launch(req)
	out, errs, code := s.run(context.Background(), "launch", "--workspace", s.ws, "--request", req)
	if code == 0 || !strings.Contains(errs, "already running as Slurm job "+l.SlurmJobID) {
		t.Fatalf("duplicate launch: exit %d %s %s", code, out, errs)
	}
	s.until("job-left", 60*time.Second, "RUNNING", func(st status) bool { return st.State == "RUNNING" })
	out, errs, code = s.run(context.Background(), "gc", "--workspace", s.ws, "--yes", "--json")
	if code != 0 || !strings.Contains(out, `"verdict": "live"`) || !s.exists(l.JobDir) {
		t.Fatalf("gc of a live job: exit %d %s %s", code, out, errs)
	}
	s.release("job-left")
	// Nobody watches the job: its dir stays after it ends, until gc.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		acct := strings.TrimSpace(c.Run(t, "sacct", "-X", "-n", "-P", "--jobs="+l.SlurmJobID, "--format=State"))
		if acct == "COMPLETED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job did not complete: %q", acct)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !s.exists(l.JobDir) {
		t.Fatal("job dir removed without a watcher or gc")
	}
	out, errs, code = s.run(context.Background(), "gc", "--workspace", s.ws, "--json")
	if code != 0 || !strings.Contains(out, `"verdict": "finished"`) || !s.exists(l.JobDir) {
		t.Fatalf("gc dry run: exit %d %s %s", code, out, errs)
	}
	out, errs, code = s.run(context.Background(), "gc", "--workspace", s.ws, "--yes", "--json")
	if code != 0 || !strings.Contains(out, `"removed": true`) || s.exists(l.JobDir) {
		t.Fatalf("gc --yes: exit %d %s %s", code, out, errs)
	}
	if st := s.status("job-left"); !st.Terminal || st.ReturnCode != 0 {
		t.Fatalf("status after gc: %+v", st)
	}
	s.job("job-left", "exit 0", nil)
	s.launch(req)
	if st := s.wait("job-left", 2*time.Minute); st.ReturnCode != 0 {
		t.Fatalf("relaunch: %+v", st)
	}
}

// TestPendingTimeoutAndAbortPending hold the node with a blocker job: a
// pending timeout cancels the job → 104; a user abort while pending → 9.
// Both run for each sandbox, all six jobs behind one blocker.
func TestPendingTimeoutAndAbortPending(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	sites := map[string]*site{}
	for _, sb := range sandboxes {
		sites[sb] = newSite(t, c, siteOpts{sandbox: sb})
	}
	blocker(t, c, sites["none"].base)
	meta := map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"pending_timeout": 5}}}}
	for _, s := range sites {
		req, _ := s.job("job-pending", "exit 0", meta)
		s.launch(req)
		req2, _ := s.job("job-abort-pending", "exit 0", nil)
		s.launch(req2)
	}
	for _, s := range sites {
		s.until("job-abort-pending", 30*time.Second, "PENDING", func(st status) bool { return st.State == "PENDING" })
		if _, errs, code := s.run(context.Background(), "cancel", "--workspace", s.ws, "--job-id", "job-abort-pending"); code != 0 {
			t.Fatalf("%s: cancel: %s", s.sandbox, errs)
		}
	}
	var wg sync.WaitGroup
	for _, s := range sites {
		var st1, st2 status
		wg.Add(1)
		go func() {
			defer wg.Done()
			st1 = s.wait("job-pending", 2*time.Minute)
			st2 = s.wait("job-abort-pending", 2*time.Minute)
			if st1.ReturnCode != 104 || st1.State != "CANCELLED" {
				t.Errorf("%s: pending timeout: %+v", s.sandbox, st1)
			}
			if st2.ReturnCode != 9 || st2.State != "CANCELLED" {
				t.Errorf("%s: abort while pending: %+v", s.sandbox, st2)
			}
		}()
	}
	wg.Wait()
}

// TestControllerDown: with slurmctld stopped while a job runs, status stays
// 127 and never terminal; once it is back the job's right result comes.
func TestControllerDown(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	s := newSite(t, c, siteOpts{})
	req, _ := s.job("job-ctld", holdUntilRelease+"\nexit 103", nil)
	s.launch(req)
	s.until("job-ctld", 60*time.Second, "RUNNING", func(st status) bool { return st.State == "RUNNING" })
	c.StopCtld(t)
	s.release("job-ctld") // the worker ends while the controller is away
	for i := 0; i < 8; i++ {
		st := s.status("job-ctld")
		if st.Terminal || st.ReturnCode != 127 {
			t.Fatalf("terminal while slurmctld is down: %+v", st)
		}
		time.Sleep(time.Second)
	}
	c.StartCtld(t)
	if st := s.wait("job-ctld", 3*time.Minute); st.ReturnCode != 103 {
		t.Fatalf("after slurmctld returned: %+v", st)
	}
}

// TestAccountingDown: with slurmdbd stopped after the job ended, status
// stays 127 until accounting returns.
func TestAccountingDown(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	s := newSite(t, c, siteOpts{})
	req, _ := s.job("job-dbd", holdUntilRelease+"\nexit 1", nil)
	l := s.launch(req)
	s.until("job-dbd", 60*time.Second, "RUNNING", func(st status) bool { return st.State == "RUNNING" })
	c.StopDbd(t)
	s.release("job-dbd")
	// Wait until the job has left RUNNING in the queue.
	deadline := time.Now().Add(time.Minute)
	for {
		out := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", l.SlurmJobID, "-o", "%T"))
		if out != "RUNNING" && out != "COMPLETING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("job did not end")
		}
		time.Sleep(300 * time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		st := s.status("job-dbd")
		if st.Terminal || st.ReturnCode != 127 {
			t.Fatalf("terminal while slurmdbd is down: %+v", st)
		}
		time.Sleep(time.Second)
	}
	if !s.exists(l.JobDir) {
		t.Fatal("job dir removed while the result was unknown")
	}
	c.StartDbd(t)
	if st := s.wait("job-dbd", 3*time.Minute); st.ReturnCode != 1 {
		t.Fatalf("after slurmdbd returned: %+v", st)
	}
}

// TestConcurrentWaitsCallBound: 20 jobs watched by 20 separate wait
// processes make at most one squeue per poll interval less lead (at most a
// quarter of it: one per three quarters of an interval), plus at most one
// sacct each, counted by wrappers the site's executables point at.
func TestConcurrentWaitsCallBound(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	const n = 20
	const poll = 2.0
	s := newSite(t, c, siteOpts{poll: poll, wrappers: true})
	var reqs []string
	for i := 0; i < n; i++ {
		req, _ := s.job(fmt.Sprintf("job-%02d", i), "sleep 4; exit 0", nil)
		reqs = append(reqs, req)
	}
	for _, r := range reqs {
		s.launch(r)
	}
	callsFile := path.Join(s.tools, "calls")
	before := s.read(callsFile)
	start := time.Now()
	var wg sync.WaitGroup
	results := make([]status, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = s.wait(fmt.Sprintf("job-%02d", i), 5*time.Minute) }()
	}
	wg.Wait()
	elapsed := time.Since(start)
	calls := strings.TrimPrefix(s.read(callsFile), before)
	squeue, sacct, scancel := countLines(calls, "squeue "), countLines(calls, "sacct "), countLines(calls, "scancel ")
	intervals := int(elapsed.Seconds()/(poll*3/4)) + 1
	t.Logf("%d wait processes over %v (%d three-quarter intervals of %v s): %d squeue, %d sacct, %d scancel", n, elapsed.Round(time.Second), intervals, poll, squeue, sacct, scancel)
	for i, st := range results {
		if st.ReturnCode != 0 {
			t.Errorf("job %d: %+v", i, st)
		}
	}
	if squeue > intervals || sacct > intervals || scancel != 0 {
		t.Fatalf("%d squeue and %d sacct calls in %d three-quarter poll intervals, want at most one of each per interval less lead", squeue, sacct, intervals)
	}
}
