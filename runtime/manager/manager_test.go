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

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

func TestReturnCodeTable(t *testing.T) {
	ec := func(s, sig int) scheduler.ExitCode { return scheduler.ExitCode{Status: s, Signal: sig} }
	zero := ec(0, 0)
	for _, c := range []struct {
		state         string
		exit, derived scheduler.ExitCode
		abort         bool
		want          int
	}{
		{"COMPLETED", zero, zero, false, 0},
		{"FAILED", ec(1, 0), zero, false, 1},
		{"FAILED", ec(0, 9), zero, false, 1},
		{"FAILED", zero, zero, false, 1},
		{"FAILED", ec(101, 0), zero, false, 101},
		{"FAILED", ec(102, 0), zero, false, 102},
		{"FAILED", ec(103, 0), zero, false, 103},
		{"FAILED", ec(104, 0), zero, false, 104},
		{"FAILED", ec(105, 0), zero, false, 1},
		{"FAILED", ec(1, 0), ec(103, 0), false, 103},
		{"COMPLETED", zero, ec(102, 0), false, 102},
		{"CANCELLED", ec(0, 15), zero, false, 104},
		{"CANCELLED", ec(0, 15), zero, true, 9},
		{"COMPLETED", zero, zero, true, 9},
		{"FAILED", ec(1, 0), zero, true, 1},
		{"TIMEOUT", ec(0, 15), zero, true, 104},
		{"BOOT_FAIL", zero, zero, false, 104},
		{"DEADLINE", zero, zero, false, 104},
		{"LAUNCH_FAILED", zero, zero, false, 104},
		{"NODE_FAIL", zero, zero, false, 104},
		{"OUT_OF_MEMORY", ec(0, 9), zero, false, 104},
		{"PREEMPTED", zero, zero, false, 104},
		{"RECONFIG_FAIL", zero, zero, false, 104},
		{"REVOKED", zero, zero, false, 104},
		{"TIMEOUT", zero, zero, false, 104},
	} {
		if got := returnCode(c.state, c.exit, c.derived, c.abort); got != c.want {
			t.Errorf("ReturnCode(%s, %v, %v, abort=%v) = %d, want %d", c.state, c.exit, c.derived, c.abort, got, c.want)
		}
	}
	for _, s := range []string{"RUNNING", "PENDING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STOPPED", "SIGNALING", "STAGE_OUT"} {
		if isTerminal(s) {
			t.Errorf("%s must not be terminal", s)
		}
	}
}

func TestLaunchToSuccess(t *testing.T) {
	e := newEnv(t)
	h := e.launch("job-1")
	dir := e.m.JobDir("job-1")
	st, err := os.Stat(filepath.Join(dir, handleFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("handle.json: %v %v", st, err)
	}
	var info HandleInfo
	data, _ := os.ReadFile(filepath.Join(dir, handleFile))
	if err := json.Unmarshal(data, &info); err != nil || info.SlurmJobID != "101" || info.Marker != "nvfl:job-1" ||
		!info.SubmitTime.Equal(e.clock.Now()) || info.JobName != "nvfl-site-1-"+schema.JobKey("job-1")[:8] {
		t.Fatalf("handle %+v %v", info, err)
	}
	if s := e.poll(h); s.State != "PENDING" || s.Terminal || s.ReturnCode != 127 {
		t.Fatalf("pending: %+v", s)
	}
	e.slurm.set("101", "RUNNING", true, "")
	if s := e.poll(h); s.State != "RUNNING" || s.ReturnCode != 127 {
		t.Fatalf("running: %+v", s)
	}
	e.slurm.set("101", "COMPLETED", false, "0:0")
	s := e.poll(h)
	if !s.Terminal || s.ReturnCode != 0 || s.State != "COMPLETED" {
		t.Fatalf("completed: %+v", s)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("job dir left behind: %v", err)
	}
	// Another process opening the job later still gets the result.
	h2, err := e.manager().Open("job-1")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := h2.Poll(context.Background()); !s.Terminal || s.ReturnCode != 0 || s.SlurmJobID != "101" {
		t.Fatalf("reopened: %+v", s)
	}
	// The id is free for a relaunch.
	e.launch("job-1")
}

func TestWorkerCodesThroughWait(t *testing.T) {
	for _, c := range []struct {
		state, exit string
		want        int
	}{
		{"FAILED", "1:0", 1}, {"FAILED", "103:0", 103}, {"TIMEOUT", "0:15", 104}, {"CANCELLED", "0:15", 104}, {"OUT_OF_MEMORY", "0:9", 104},
	} {
		e := newEnv(t)
		h := e.launch("j")
		e.slurm.set("101", "RUNNING", true, "")
		e.poll(h)
		e.slurm.set("101", c.state, false, c.exit)
		st, err := h.WaitReporting(e.deadline(), nil)
		if err != nil || !st.Terminal || st.ReturnCode != c.want {
			t.Errorf("%s %s: %+v %v, want %d", c.state, c.exit, st, err, c.want)
		}
	}
}

func TestSchedulerUnavailableNeverTerminal(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "RUNNING", true, "")
	e.poll(h)
	e.slurm.set("101", "COMPLETED", false, "0:0")
	e.slurm.squeueFail = true
	for i := 0; i < 20; i++ {
		if s := e.poll(h); s.Terminal || s.ReturnCode != 127 || s.State != "RUNNING" || !strings.Contains(s.Detail, "unavailable") {
			t.Fatalf("squeue down, poll %d: %+v", i, s)
		}
	}
	e.slurm.squeueFail = false
	e.slurm.sacctFail = true
	for i := 0; i < 20; i++ {
		if s := e.poll(h); s.Terminal || s.ReturnCode != 127 {
			t.Fatalf("sacct down, poll %d: %+v", i, s)
		}
	}
	if _, err := os.Stat(e.m.JobDir("j")); err != nil {
		t.Fatal("job dir removed while the result was unknown")
	}
	e.slurm.sacctFail = false
	e.slurm.timeout = true
	for i := 0; i < 10; i++ {
		if s := e.poll(h); s.Terminal || !strings.Contains(s.Detail, "rc=timeout") {
			t.Fatalf("timeouts, poll %d: %+v", i, s)
		}
	}
	e.slurm.timeout = false
	if s := e.poll(h); !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("back: %+v", s)
	}
}

func TestFiveMissRule(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.poll(h)
	j := e.slurm.job("101")
	e.slurm.mu.Lock()
	j.inQueue, j.inAcct = false, false
	e.slurm.mu.Unlock()
	// Forced refreshes 1 s apart: only answers 6 s apart count as misses
	// (at 1, 7, 13 and 19 s; the fifth would be at 25 s).
	for i := 0; i < 24; i++ {
		e.clock.Advance(time.Second)
		c, err := e.m.obs.view(context.Background(), func() error { return nil }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, done := c.Finished["j"]; done {
			t.Fatalf("terminal after %d s: five misses need at least 24 s", i+1)
		}
	}
	tm, _ := readTimers(e.m.JobDir("j"))
	if tm.Misses != 4 {
		t.Fatalf("misses after 24 s of 1 s polls = %d, want 4", tm.Misses)
	}
	// An unavailable accounting answer is not a miss.
	e.slurm.sacctFail = true
	for i := 0; i < 5; i++ {
		if s := e.poll(h); s.Terminal {
			t.Fatalf("terminal on unavailable sacct: %+v", s)
		}
	}
	e.slurm.sacctFail = false
	s := e.poll(h)
	if !s.Terminal || s.ReturnCode != 104 || s.State != stateLost {
		t.Fatalf("after five misses: %+v", s)
	}
}

func TestFiveMissRuleResetByRecord(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	j := e.slurm.job("101")
	e.slurm.mu.Lock()
	j.inQueue, j.inAcct = false, false
	e.slurm.mu.Unlock()
	for i := 0; i < 4; i++ {
		e.poll(h)
	}
	e.slurm.mu.Lock()
	j.inAcct, j.state = true, "RUNNING"
	e.slurm.mu.Unlock()
	e.poll(h)
	e.slurm.mu.Lock()
	j.inAcct = false
	e.slurm.mu.Unlock()
	for i := 0; i < 4; i++ {
		if s := e.poll(h); s.Terminal {
			t.Fatalf("record did not reset the misses: %+v", s)
		}
	}
	if s := e.poll(h); !s.Terminal || s.ReturnCode != 104 {
		t.Fatalf("fifth miss: %+v", s)
	}
}

func TestPendingTimeoutCancels(t *testing.T) {
	e := newEnv(t)
	job := e.job(e.m, "j")
	job.PendingTimeout = 30 * time.Second
	h, err := e.m.Launch(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // pending observed at 10 s, 20 s, 30 s
		if s := e.poll(h); s.Terminal {
			t.Fatalf("early: %+v", s)
		}
	}
	if e.slurm.count("scancel") != 0 {
		t.Fatal("cancelled before the pending timeout")
	}
	e.poll(h) // 40 s: 30 s after the first pending observation
	if e.slurm.count("scancel") != 1 {
		t.Fatalf("scancel calls = %d, want 1", e.slurm.count("scancel"))
	}
	s, _ := h.WaitReporting(e.deadline(), nil)
	if !s.Terminal || s.ReturnCode != 104 || s.State != "CANCELLED" {
		t.Fatalf("pending timeout: %+v", s)
	}
}

func TestUserAbort(t *testing.T) {
	for _, running := range []bool{false, true} {
		e := newEnv(t)
		h := e.launch("j")
		if running {
			e.slurm.set("101", "RUNNING", true, "")
		}
		e.poll(h)
		// Abort from another process.
		other, err := e.manager().Open("j")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Terminate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if e.slurm.count("scancel") != 1 {
			t.Fatalf("scancel calls = %d", e.slurm.count("scancel"))
		}
		s, _ := h.WaitReporting(e.deadline(), nil)
		if !s.Terminal || s.ReturnCode != 9 {
			t.Fatalf("running=%v: %+v", running, s)
		}
	}
}

// TestReleaseLetsAnotherProcessWatch: after Release this manager no longer
// holds the job (Open reads it again from its persisted handle) and a
// second manager, as another process, waits it to its result.
func TestReleaseLetsAnotherProcessWatch(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	m := h.m
	if len(m.liveHandles()) != 1 {
		t.Fatalf("live before Release: %v", m.liveHandles())
	}
	h.Release()
	if len(m.liveHandles()) != 0 {
		t.Fatalf("live after Release: %v", m.liveHandles())
	}
	if again, err := m.Open("j"); err != nil || again == h {
		t.Fatalf("Open after Release: %v, same handle %v", err, again == h)
	}
	other, err := e.manager().Open("j")
	if err != nil {
		t.Fatal(err)
	}
	e.slurm.set("101", "COMPLETED", true, "0:0")
	s, err := other.WaitReporting(e.deadline(), nil)
	if err != nil || !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("another process's wait: %+v %v", s, err)
	}
}

func TestAbortRaceCompleted(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "COMPLETED", false, "0:0")
	if _, err := h.Terminate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.slurm.count("scancel") != 0 {
		t.Fatal("scancel of a job no longer in the queue")
	}
	if s, _ := h.WaitReporting(e.deadline(), nil); s.ReturnCode != 9 {
		t.Fatalf("completed after abort: %+v", s)
	}
}

func TestOwnershipMismatchNeverTerminalNorCancelled(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	j := e.slurm.job("101")
	e.slurm.mu.Lock()
	j.comment = "nvfl:someone-else"
	e.slurm.mu.Unlock()
	if _, err := h.Terminate(context.Background()); !errors.Is(err, ErrCancelPending) || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("terminate of a mismatching row: %v", err)
	}
	for i := 0; i < 10; i++ {
		if s := e.poll(h); s.Terminal || !strings.Contains(s.Detail, "does not match") {
			t.Fatalf("mismatch: %+v", s)
		}
	}
	if e.slurm.count("scancel") != 0 {
		t.Fatal("cancelled a job whose row does not match its handle")
	}
	// Duplicate rows too.
	e.slurm.mu.Lock()
	j.comment = "nvfl:j"
	e.slurm.squeueExtra = "101|RUNNING|1000|nvfl:j|" + j.name + "|None\n"
	e.slurm.mu.Unlock()
	if s := e.poll(h); s.Terminal || !strings.Contains(s.Detail, "2 rows") {
		t.Fatalf("duplicate: %+v", s)
	}
	// Stray rows of other ids are ignored.
	e.slurm.mu.Lock()
	e.slurm.squeueExtra = "555|RUNNING|1000|nvfl:x|y|None\n"
	e.slurm.mu.Unlock()
	if s := e.poll(h); s.Detail != "cancellation requested" || e.slurm.count("scancel") != 1 {
		t.Fatalf("stray: %+v scancel=%d", s, e.slurm.count("scancel"))
	}
}

func TestSacctMismatchAndReuse(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	j := e.slurm.job("101")
	e.slurm.mu.Lock()
	j.inQueue, j.state, j.user = false, "COMPLETED", "mallory"
	e.slurm.mu.Unlock()
	for i := 0; i < 8; i++ {
		if s := e.poll(h); s.Terminal {
			t.Fatalf("user mismatch: %+v", s)
		}
	}
	e.slurm.mu.Lock()
	j.user, j.submit = "alice", e.clock.Now().Add(-24*time.Hour)
	e.slurm.mu.Unlock()
	for i := 0; i < 8; i++ {
		if s := e.poll(h); s.Terminal || !strings.Contains(s.Detail, "reused") {
			t.Fatalf("reused id: %+v", s)
		}
	}
}

func TestMalformedOutputNeverTerminal(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "COMPLETED", false, "0:0")
	e.slurm.sacctExtra = "garbage\n"
	for i := 0; i < 8; i++ {
		if s := e.poll(h); s.Terminal || !strings.Contains(s.Detail, "malformed") {
			t.Fatalf("malformed: %+v", s)
		}
	}
	e.slurm.sacctExtra = ""
	if s := e.poll(h); !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("recovered: %+v", s)
	}
}

func TestLaunchFailuresRemoveJobDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(*fakeSlurm)
		want  string
	}{
		{"sbatch error", func(f *fakeSlurm) { f.sbatchFail = true }, "sbatch unavailable"},
		{"rejected", func(f *fakeSlurm) {
			f.sbatchReject = "sbatch: error: CPU count per node can not be satisfied\nsbatch: error: Batch job submission failed: Requested node configuration is not available\n"
		}, "Slurm rejected job j: sbatch: error: CPU count per node can not be satisfied; sbatch: error: Batch job submission failed: Requested node configuration is not available"},
		{"bad output", func(f *fakeSlurm) { f.sbatchOut = "Submitted batch job ID\n" }, "is not <job id>[;<cluster>]"},
		{"two lines", func(f *fakeSlurm) { f.sbatchOut = "ID\nID\n" }, "is not <job id>[;<cluster>]"},
		{"cluster", func(f *fakeSlurm) { f.sbatchOut = "ID;other\n" }, "multi-cluster"},
	} {
		e := newEnv(t)
		c.setup(e.slurm)
		_, err := e.m.Launch(context.Background(), e.job(e.m, "j"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
		switch c.name {
		case "rejected":
			if strings.Contains(err.Error(), "unavailable") || !strings.Contains(Hint(err), "partition's limits") {
				t.Errorf("rejected: err = %v hint = %q", err, Hint(err))
			}
		case "sbatch error":
			if !strings.Contains(Hint(err), "bootstrap-check") {
				t.Errorf("unavailable: hint = %q", Hint(err))
			}
		}
		if _, serr := os.Stat(e.m.JobDir("j")); !os.IsNotExist(serr) {
			t.Errorf("%s: job dir left behind", c.name)
		}
		if c.name == "cluster" {
			last := e.slurm.argvs[len(e.slurm.argvs)-1]
			if strings.Join(last, " ") != "/s/scancel -M other -Q --me 101" {
				t.Errorf("cluster: last call %v", last)
			}
		}
		// The failed id can be launched again.
		e.slurm.sbatchFail, e.slurm.sbatchOut, e.slurm.sbatchReject = false, "", ""
		e.launch("j")
	}
}

func TestLaunchRefusals(t *testing.T) {
	e := newEnv(t)
	e.launch("j")
	if _, err := e.m.Launch(context.Background(), e.job(e.m, "j")); err == nil || !strings.Contains(err.Error(), "live handle") {
		t.Fatalf("duplicate in-process launch: %v", err)
	}
	// With Attach, the live handle is the running job (a process that
	// launches and watches, as wait --follow does): refused as running, so
	// that the caller attaches to it; nothing is submitted.
	attach := e.job(e.m, "j")
	attach.Attach = true
	var running *RunningError
	if _, err := e.m.Launch(context.Background(), attach); !errors.As(err, &running) || running.Info.SlurmJobID != "101" {
		t.Fatalf("in-process launch with attach: %v, want the RunningError of Slurm job 101", err)
	}
	// Another process: the persisted handle refuses it.
	m2 := e.manager()
	if _, err := m2.Launch(context.Background(), e.job(m2, "j")); err == nil || !strings.Contains(err.Error(), "already running as Slurm job 101") ||
		!strings.Contains(Hint(err), "flare-slurm wait --workspace ") || !strings.Contains(Hint(err), "flare-slurm cancel --workspace ") {
		t.Fatalf("duplicate cross-process launch: %v (hint %q)", err, Hint(err))
	}
	// A leftover dir without a handle: stale artifacts, left untouched.
	stale := e.m.JobDir("k")
	os.Mkdir(stale, 0o700)
	os.WriteFile(filepath.Join(stale, "batch.sh"), []byte("x"), 0o700)
	if _, err := e.m.Launch(context.Background(), e.job(e.m, "k")); err == nil || !strings.Contains(err.Error(), "stale artifacts") ||
		!strings.Contains(Hint(err), "flare-slurm gc --workspace ") {
		t.Fatalf("stale: %v (hint %q)", err, Hint(err))
	}
	if _, err := os.Stat(filepath.Join(stale, "batch.sh")); err != nil {
		t.Fatal("stale artifacts were removed by a refused launch")
	}
	if e.slurm.count("sbatch") != 1 {
		t.Fatalf("sbatch calls = %d, want 1", e.slurm.count("sbatch"))
	}
}

func TestOneSqueuePerIntervalAcrossManagers(t *testing.T) {
	e := newEnv(t)
	var hs []*Handle
	for i := 0; i < 20; i++ {
		hs = append(hs, e.launch("job-"+string(rune('a'+i))))
	}
	// 20 "processes", each with its own manager and handle.
	var others []*Handle
	for i := 0; i < 20; i++ {
		h, err := e.manager().Open(hs[i].info.JobID)
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, h)
	}
	for round := 0; round < 6; round++ {
		e.clock.Advance(10 * time.Second)
		for _, h := range append(hs, others...) {
			if _, err := h.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(100 * time.Millisecond)
		}
	}
	if n := e.slurm.count("squeue"); n != 6 {
		t.Fatalf("squeue calls = %d over 6 intervals, want 6", n)
	}
	if n := e.slurm.count("sacct"); n != 0 {
		t.Fatalf("sacct calls = %d with every job in the queue", n)
	}
	// Every job is in the one squeue argv.
	var last []string
	for _, a := range e.slurm.argvs {
		if filepath.Base(a[0]) == "squeue" {
			last = a
		}
	}
	if ids := strings.Split(flagValue(last, "--jobs"), ","); len(ids) != 20 {
		t.Fatalf("squeue ids %v", ids)
	}
}

func TestWaitJitter(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ j, want float64 }{{-1, 9}, {0, 10}, {1, 11}, {5, 11}} {
		e.m.cfg.Jitter = func() float64 { return c.j }
		if got := e.m.waitInterval(); got != time.Duration(c.want*float64(time.Second)) {
			t.Errorf("jitter %v: %v", c.j, got)
		}
	}
}

func TestGC(t *testing.T) {
	e := newEnv(t)
	e.launch("done")
	e.launch("live")
	e.launch("gone")
	e.slurm.set("101", "COMPLETED", false, "0:0")
	e.slurm.set("102", "RUNNING", true, "")
	j := e.slurm.job("103")
	e.slurm.mu.Lock()
	j.inQueue, j.inAcct = false, false
	e.slurm.mu.Unlock()
	orphan := e.m.JobDir("orphan") // crashed before handle.json
	os.Mkdir(orphan, 0o700)
	old := e.clock.Now().Add(-time.Hour) // older than any launch in progress
	os.Chtimes(orphan, old, old)
	g := e.manager()
	entries, err := g.GC(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, en := range entries {
		verdicts[filepath.Base(en.Dir)] = en.Verdict
		if en.Removed {
			t.Fatalf("dry run removed %s", en.Dir)
		}
	}
	want := map[string]string{schema.JobKey("done"): gcFinished, schema.JobKey("live"): gcLive, schema.JobKey("gone"): gcUnknown, schema.JobKey("orphan"): gcFinished}
	for k, v := range want {
		if verdicts[k] != v {
			t.Errorf("%s verdict %q, want %q", k, verdicts[k], v)
		}
	}
	for _, id := range []string{"done", "live", "gone", "orphan"} {
		if _, err := os.Stat(e.m.JobDir(id)); err != nil {
			t.Fatalf("dry run: %s removed", id)
		}
	}
	// An unavailable scheduler removes nothing.
	e.slurm.squeueFail = true
	entries, _ = g.GC(context.Background(), true)
	for _, en := range entries {
		if en.Removed || en.Verdict != gcUnknown {
			t.Fatalf("unavailable: %+v", en)
		}
	}
	e.slurm.squeueFail = false
	if _, err := g.GC(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for id, keep := range map[string]bool{"done": false, "live": true, "gone": true, "orphan": false} {
		_, err := os.Stat(e.m.JobDir(id))
		if (err == nil) != keep {
			t.Errorf("%s: exists=%v, want %v", id, err == nil, keep)
		}
	}
	// The collected job's result is recorded.
	h, err := e.manager().Open("done")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := h.Poll(context.Background()); !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("collected: %+v", s)
	}
}

func TestValidateWorkspace(t *testing.T) {
	e := newEnv(t)
	uid := os.Getuid()
	if err := ValidateWorkspace(e.ws, uid); err != nil {
		t.Fatal(err)
	}
	if err := ValidateWorkspace(e.ws, uid+1); err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Fatalf("owner: %v", err)
	}
	os.Chmod(e.ws, 0o750)
	if err := ValidateWorkspace(e.ws, uid); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("mode: %v", err)
	}
	os.Chmod(e.ws, 0o700)
	link := filepath.Join(t.TempDir(), "ws")
	os.Symlink(e.ws, link)
	if err := ValidateWorkspace(link, uid); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlink: %v", err)
	}
	os.Remove(filepath.Join(e.ws, "local"))
	os.Symlink(filepath.Join(e.ws, "startup"), filepath.Join(e.ws, "local"))
	if err := ValidateWorkspace(e.ws, uid); err == nil || !strings.Contains(err.Error(), "local must be a real directory") {
		t.Fatalf("local symlink: %v", err)
	}
}

func TestCheckScheduler(t *testing.T) {
	for _, c := range []struct {
		version    string
		sacctFails int
		want       string
	}{
		{"slurm 23.02.3\n", 0, ""},
		{"slurm-wlm 24.11.5\n", 2, ""},
		{"slurm 23.02.2\n", 0, "older than the minimum 23.02.3"},
		{"slurm 22.05.9\n", 0, "older than the minimum 23.02.3"},
		{"slurm 24.11.5\n", 3, "accounting (slurmdbd) is required"},
	} {
		fails := c.sacctFails
		probes := 0
		r := runnerFunc(func(cmd scheduler.Command) scheduler.Result {
			if strings.HasSuffix(cmd.Argv[0], "sbatch") {
				return scheduler.Result{Stdout: []byte(c.version)}
			}
			probes++
			if fails > 0 {
				fails--
				return scheduler.Result{ExitCode: 1, Stderr: "sacct: error: slurmdbd: Connection refused"}
			}
			return scheduler.Result{}
		})
		cl := scheduler.New(scheduler.Paths{Sbatch: "/sbatch", Sacct: "/sacct"}, 1, "u", nil, scheduler.Timeouts{Query: time.Second}, r)
		slept := 0
		_, err := CheckScheduler(context.Background(), cl, func(context.Context, time.Duration) error { slept++; return nil })
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q/%d: err = %v, want %q", c.version, c.sacctFails, err, c.want)
		}
		if c.want == "" && probes != c.sacctFails+1 {
			t.Errorf("%q: probes = %d", c.version, probes)
		}
	}
}

type runnerFunc func(scheduler.Command) scheduler.Result

func (f runnerFunc) Run(_ context.Context, c scheduler.Command) scheduler.Result { return f(c) }

// A handle whose job dir was removed behind its back (by hand, or by gc in
// another process) is still asked about and still gets its result.
func TestHandleOutlivesItsJobDir(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.poll(h)
	if err := os.RemoveAll(e.m.JobDir("j")); err != nil {
		t.Fatal(err)
	}
	e.slurm.set("101", "RUNNING", true, "")
	if s := e.poll(h); s.State != "RUNNING" || s.Terminal {
		t.Fatalf("running: %+v", s)
	}
	e.slurm.set("101", "FAILED", false, "102:0")
	if s := e.poll(h); !s.Terminal || s.ReturnCode != 102 {
		t.Fatalf("failed: %+v", s)
	}
}

// Many goroutines waiting on handles of one process, with a concurrent
// abort, share the observation without races (run with -race).
func TestConcurrentWaiters(t *testing.T) {
	e := newEnv(t)
	var hs []*Handle
	for i := 0; i < 8; i++ {
		hs = append(hs, e.launch("job-"+string(rune('a'+i))))
	}
	for _, h := range hs {
		e.slurm.set(h.info.SlurmJobID, "COMPLETED", false, "0:0")
	}
	done := make(chan Status, len(hs)*2)
	for _, h := range hs {
		go func() { st, _ := h.WaitReporting(e.deadline(), nil); done <- st }()
		go func() { st, _ := h.Terminate(context.Background()); done <- st }()
	}
	for i := 0; i < len(hs)*2; i++ {
		<-done
	}
	for _, h := range hs {
		if st, _ := h.Poll(context.Background()); !st.Terminal || (st.ReturnCode != 0 && st.ReturnCode != 9) {
			t.Fatalf("%+v", st)
		}
	}
}

func TestTerminateWhileSchedulerDown(t *testing.T) {
	e := newEnv(t)
	h := e.launch("j")
	e.slurm.set("101", "RUNNING", true, "")
	e.poll(h)
	e.slurm.squeueFail = true
	if _, err := h.Terminate(context.Background()); !errors.Is(err, ErrCancelPending) {
		t.Fatalf("terminate with squeue down: %v", err)
	}
	if e.slurm.count("scancel") != 0 {
		t.Fatal("scancel without a verified row")
	}
	// The abort is recorded: the next poll that sees the row cancels the job.
	e.slurm.squeueFail = false
	e.poll(h)
	if e.slurm.count("scancel") != 1 {
		t.Fatalf("scancel calls = %d after the scheduler returned", e.slurm.count("scancel"))
	}
	if s, _ := h.WaitReporting(e.deadline(), nil); s.ReturnCode != 9 {
		t.Fatalf("%+v", s)
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

// TestCopiedHandleNeverMatchesTheOriginalsJob (issue 25 item 13):
// workspaces of one account share job names, and markers held only the job
// id, so a handle copied into another workspace (a copy of a workspace, a
// test one beside the real one) cancelled the original's job. The marker
// names the workspace, and the runtime matches its own workspace's marker,
// not the one a handle recorded.
func TestCopiedHandleNeverMatchesTheOriginalsJob(t *testing.T) {
	a := newEnv(t)
	job := a.job(a.m, "j")
	job.Marker = schema.CommentMarker(a.ws, "j")
	for i, arg := range job.Argv {
		if strings.HasPrefix(arg, "--comment=") {
			job.Argv[i] = "--comment=" + job.Marker
		}
	}
	if _, err := a.m.Launch(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	// A second workspace of the same account, on the same scheduler, with
	// a copy of the first one's job dir.
	b := newEnv(t)
	b.slurm = a.slurm
	b.m = b.manager()
	src, dst := a.m.JobDir("j"), b.m.JobDir("j")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, handleFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, handleFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := b.m.Open("j")
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(10 * time.Second)
	if _, err := h.Terminate(context.Background()); err == nil {
		t.Error("cancel through a copied handle succeeded")
	}
	if n := a.slurm.count("scancel"); n != 0 {
		t.Errorf("scancel calls = %d: the copy cancelled the original's job", n)
	}
	st, _ := h.Poll(context.Background())
	if st.Terminal || !strings.Contains(st.Detail, "does not match its handle") {
		t.Errorf("status through the copy: %+v", st)
	}
	// The original still watches and cancels its job.
	orig, err := a.manager().Open("j")
	if err != nil {
		t.Fatal(err)
	}
	a.clock.Advance(10 * time.Second)
	if _, err := orig.Terminate(context.Background()); err != nil {
		t.Fatalf("the original workspace cannot cancel its job: %v", err)
	}
	if n := a.slurm.count("scancel"); n != 1 {
		t.Errorf("scancel calls = %d after the original's cancel, want 1", n)
	}
}
