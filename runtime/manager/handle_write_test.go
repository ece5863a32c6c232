package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
)

// tempHandles lists the unpublished handle temp files of a job dir.
func tempHandles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmps []string
	for _, e := range ents {
		if fsx.IsTempOf(e.Name(), handleFile) {
			tmps = append(tmps, filepath.Join(dir, e.Name()))
		}
	}
	return tmps
}

var errSimulatedCrash = errors.New("simulated crash between writing and publishing handle.json")

// launchCrashing launches jobID in m and "crashes" the process (a panic
// out of Launch) once the handle's temp file is written and fsynced but
// before it is published as handle.json.
func launchCrashing(t *testing.T, e *env, m *Manager, jobID string) {
	t.Helper()
	m.handleStaged = func(string) { panic(errSimulatedCrash) }
	defer func() {
		m.handleStaged = nil
		if r := recover(); r != errSimulatedCrash {
			t.Fatalf("launch did not reach the crash point: recovered %v", r)
		}
	}()
	_, err := m.Launch(context.Background(), e.job(m, jobID))
	t.Fatalf("launch returned (%v) instead of crashing", err)
}

// While the handle is being written, every reader of the workspace sees
// no handle.json at all — never a partial one — and the temp file is
// complete before it is published.
func TestHandleNeverVisiblePartially(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.m.JobDir("j")
	other := e.manager()
	var staged bool
	e.m.handleStaged = func(tmp string) {
		staged = true
		if filepath.Dir(tmp) != dir {
			t.Errorf("temp %s is not in the job dir %s", tmp, dir)
		}
		if _, err := os.Lstat(filepath.Join(dir, handleFile)); !os.IsNotExist(err) {
			t.Errorf("handle.json exists before its content is complete: %v", err)
		}
		if _, err := readHandle(dir); !errors.Is(err, errNoHandle) {
			t.Errorf("reader during the write: want errNoHandle, got %v", err)
		}
		if _, err := other.Open("j"); err == nil || !strings.Contains(err.Error(), "no handle") {
			t.Errorf("Open during the write: %v", err)
		}
		jobs, err := other.obs.listJobs()
		if err != nil || len(jobs) != 0 {
			t.Errorf("watchers during the write: %d jobs, %v", len(jobs), err)
		}
		st, err := os.Lstat(tmp)
		if err != nil || st.Mode() != 0o600 {
			t.Fatalf("temp handle: %v %v", st, err)
		}
		var h HandleInfo
		data, _ := os.ReadFile(tmp)
		if err := json.Unmarshal(data, &h); err != nil || h.SlurmJobID != "101" || !bytes.HasSuffix(data, []byte("}\n")) {
			t.Errorf("temp handle incomplete when staged: %q (%v)", data, err)
		}
	}
	h := e.launch("j")
	if !staged {
		t.Fatal("the handle was not written through a temp file")
	}
	if got, err := readHandle(dir); err != nil || got != h.Info() {
		t.Fatalf("published handle %+v, %v; want %+v", got, err, h.Info())
	}
	if tmps := tempHandles(t, dir); len(tmps) != 0 {
		t.Fatalf("temp files left after publishing: %v", tmps)
	}
	st, _ := os.Lstat(filepath.Join(dir, handleFile))
	if st.Mode() != 0o600 {
		t.Fatalf("handle.json mode %v", st.Mode())
	}
}

// An existing handle.json is never replaced, whichever way it is published.
func TestHandleWriteNeverReplaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.m.JobDir("j")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	first := HandleInfo{Format: handleFormat, JobID: "j", SlurmJobID: "7", JobName: "n", Marker: "nvfl:j", SubmitTime: e.clock.Now()}
	if err := writeHandle(dir, first, true, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, handleFile))
	second := first
	second.SlurmJobID = "8"
	if err := writeHandle(dir, second, true, nil); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second handle write: want ErrExist, got %v", err)
	}
	// Between staging and publishing, another writer's handle appears.
	if err := os.Remove(filepath.Join(dir, handleFile)); err != nil {
		t.Fatal(err)
	}
	appears := func(string) {
		if err := os.WriteFile(filepath.Join(dir, handleFile), before, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeHandle(dir, second, false, appears); !errors.Is(err, os.ErrExist) {
		t.Fatalf("publish over a handle that appeared: want ErrExist, got %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, handleFile)); !bytes.Equal(after, before) {
		t.Fatalf("handle.json replaced:\n%s\nwant\n%s", after, before)
	}
	if got, err := readHandle(dir); err != nil || got.SlurmJobID != "7" {
		t.Fatalf("handle now %+v, %v", got, err)
	}
	if tmps := tempHandles(t, dir); len(tmps) != 0 {
		t.Fatalf("refused writes left temp files: %v", tmps)
	}
}

// A process that crashes after writing the handle's temp file but before
// publishing it leaves a job dir with no handle.json: watchers ignore it,
// Open reports a launch in progress or crashed, and gc applies the rules of
// a dir without a handle (young: unknown; a job of its id in the queue:
// live; else finished, and --yes removes the dir with its temp file).
func TestHandleCrashBeforePublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	launchCrashing(t, e, e.m, "j")
	dir := e.m.JobDir("j")
	if _, err := os.Lstat(filepath.Join(dir, handleFile)); !os.IsNotExist(err) {
		t.Fatalf("handle.json exists after a crash before publishing: %v", err)
	}
	tmps := tempHandles(t, dir)
	if len(tmps) != 1 {
		t.Fatalf("temp handles after the crash: %v", tmps)
	}
	var tmpInfo HandleInfo
	if data, _ := os.ReadFile(tmps[0]); json.Unmarshal(data, &tmpInfo) != nil || tmpInfo.SlurmJobID != "101" {
		t.Fatalf("temp handle: %q", data)
	}

	// A restarted process.
	var logs bytes.Buffer
	m := e.manager()
	m.log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := m.Open("j"); err == nil || !strings.Contains(err.Error(), "no handle") {
		t.Fatalf("open of the crashed launch: %v", err)
	}
	k, err := m.Launch(context.Background(), e.job(m, "k"))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second)
	if s, err := k.Poll(context.Background()); err != nil || s.State != "PENDING" {
		t.Fatalf("another job beside the crashed dir: %+v %v", s, err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("watchers warned about the temp handle:\n%s", logs.String())
	}
	if _, err := m.Launch(context.Background(), e.job(m, "j")); err == nil || !strings.Contains(err.Error(), "stale artifacts") {
		t.Fatalf("relaunch over the crashed dir: %v", err)
	}

	gcOf := func(remove bool) GCEntry {
		t.Helper()
		entries, err := m.GC(context.Background(), remove)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Dir == dir {
				return en
			}
		}
		t.Fatalf("gc did not list %s: %+v", dir, entries)
		return GCEntry{}
	}
	// Young: a launch may be in progress.
	if en := gcOf(true); en.Verdict != gcUnknown || en.Removed || !strings.Contains(en.Reason, "launch may be in progress") {
		t.Fatalf("young crashed dir: %+v", en)
	}
	old := e.clock.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	// Its job (101) is still queued: live, kept.
	if en := gcOf(true); en.Verdict != gcLive || en.Removed || !strings.Contains(en.Reason, "unpublished handle") {
		t.Fatalf("crashed dir with a queued job: %+v", en)
	}
	e.slurm.set("101", "CANCELLED", false, "0:15")
	if en := gcOf(false); en.Verdict != gcFinished || en.Removed {
		t.Fatalf("dry run: %+v", en)
	}
	if _, err := os.Stat(tmps[0]); err != nil {
		t.Fatalf("dry run removed the temp handle: %v", err)
	}
	if en := gcOf(true); en.Verdict != gcFinished || !en.Removed {
		t.Fatalf("crashed dir after its job left the queue: %+v", en)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("job dir (with its temp handle) not removed: %v", err)
	}
	if _, err := os.Stat(m.JobDir("k")); err != nil {
		t.Fatalf("gc touched the live job beside it: %v", err)
	}
	// The id can be launched again.
	if _, err := m.Launch(context.Background(), e.job(m, "j")); err != nil {
		t.Fatalf("relaunch after gc: %v", err)
	}
}

// A crash after the link(2) fallback published handle.json but before the
// temp name was unlinked leaves two names of one complete file: the job is
// watched normally, and its removal takes both.
func TestHandleLeftoverTempBesideHandle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.launch("j")
	dir := e.m.JobDir("j")
	tmp := filepath.Join(dir, ".handle.json.tmp-0123456789abcdef")
	if err := os.Link(filepath.Join(dir, handleFile), tmp); err != nil {
		t.Fatal(err)
	}
	if got, err := e.manager().Open("j"); err != nil || got.Info() != h.Info() {
		t.Fatalf("open: %+v %v", got, err)
	}
	e.slurm.set("101", "COMPLETED", false, "0:0")
	if s := e.poll(h); !s.Terminal || s.ReturnCode != 0 {
		t.Fatalf("poll: %+v", s)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("job dir with a leftover temp handle not removed: %v", err)
	}
}

// When handle.json cannot be written after sbatch accepted the job, the
// job is cancelled only once squeue proves the row is ours (uid, comment,
// name), like every other scancel.
func TestHandleWriteFailureCancelsOnlyAVerifiedJob(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		comment    string
		squeueFail bool
		scancels   int
	}{
		{"verified", "", false, 1},
		{"foreign row", "nvfl:someone-else", false, 0},
		{"squeue down", "", true, 0},
	} {
		e := newEnv(t)
		job := e.job(e.m, "j")
		write := job.Write
		job.Write = func() error {
			if err := write(); err != nil {
				return err
			}
			// handle.json cannot be created: a directory holds its name.
			return os.Mkdir(filepath.Join(job.Dir, handleFile), 0o700)
		}
		e.slurm.squeueFail = c.squeueFail
		if c.comment != "" {
			e.slurm.sbatchHook = func(j *fakeJob) { j.comment = c.comment }
		}
		_, err := e.m.Launch(context.Background(), job)
		if err == nil || !strings.Contains(err.Error(), "record handle") {
			t.Fatalf("%s: launch: %v", c.name, err)
		}
		if n := e.slurm.count("scancel"); n != c.scancels {
			t.Errorf("%s: scancel calls = %d, want %d", c.name, n, c.scancels)
		}
		if c.scancels == 0 && !strings.Contains(err.Error(), "scancel "+"101") {
			t.Errorf("%s: the error does not tell the operator what to cancel: %v", c.name, err)
		}
		if _, serr := os.Stat(job.Dir); !os.IsNotExist(serr) {
			t.Errorf("%s: job dir left behind", c.name)
		}
	}
}
