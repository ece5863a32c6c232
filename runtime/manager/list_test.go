package manager

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/schema"
)

// testHandle is a complete, valid handle of jobID.
func testHandle(jobID string) HandleInfo {
	return HandleInfo{
		Format: handleFormat, JobID: jobID, SlurmJobID: "4242", JobName: "nvflare-" + jobID,
		Marker: "m-" + jobID, SubmitTime: time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC), PendingTimeout: 600,
	}
}

// makeJobDir creates jobs/<key> (0700) and, unless h is nil, its handle
// through the runtime's own writer.
func makeJobDir(t testing.TB, jobs, key string, h *HandleInfo) string {
	t.Helper()
	dir := filepath.Join(jobs, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if h != nil {
		if err := writeHandle(dir, *h, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newTestWorkspace(t testing.TB) (ws, jobs string) {
	t.Helper()
	ws = t.TempDir()
	jobs = filepath.Join(ws, controlDir, jobsDirName)
	if err := os.MkdirAll(jobs, 0o700); err != nil {
		t.Fatal(err)
	}
	return ws, jobs
}

// listWithDeadline runs ListHandles with a deadline, so that a FIFO that
// blocks the open fails the test instead of hanging it.
func listWithDeadline(t *testing.T, ws string) ([]HandleInfo, error) {
	t.Helper()
	type result struct {
		hs  []HandleInfo
		err error
	}
	done := make(chan result, 1)
	go func() {
		hs, err := ListHandles(ws)
		done <- result{hs, err}
	}()
	select {
	case r := <-done:
		return r.hs, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("ListHandles did not return within 10s (blocked on a FIFO?)")
		return nil, nil
	}
}

func jobIDs(hs []HandleInfo) []string {
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.JobID
	}
	return ids
}

func TestListHandlesKeepsOnlyValidHandlesOfTheirOwnKey(t *testing.T) {
	ws, jobs := newTestWorkspace(t)
	elsewhere := t.TempDir()
	for _, id := range []string{"job-b", "job-a"} {
		h := testHandle(id)
		makeJobDir(t, jobs, schema.JobKey(id), &h)
	}
	// A handle copied into another job's dir names a job whose key is not
	// the dir's.
	other := testHandle("job-c")
	makeJobDir(t, jobs, schema.JobKey("not-job-c"), &other)
	// A launch in progress: no handle yet.
	makeJobDir(t, jobs, schema.JobKey("job-d"), nil)
	// handle.json is a symlink to a valid handle outside the workspace.
	e := testHandle("job-e")
	target := makeJobDir(t, elsewhere, schema.JobKey("job-e"), &e)
	linkDir := makeJobDir(t, jobs, schema.JobKey("job-e"), nil)
	if err := os.Symlink(filepath.Join(target, handleFile), filepath.Join(linkDir, handleFile)); err != nil {
		t.Fatal(err)
	}
	// The job dir itself is a symlink to a valid job dir outside.
	f := testHandle("job-f")
	fTarget := makeJobDir(t, elsewhere, schema.JobKey("job-f"), &f)
	if err := os.Symlink(fTarget, filepath.Join(jobs, schema.JobKey("job-f"))); err != nil {
		t.Fatal(err)
	}
	// handle.json is a FIFO: opening it for reading must not block.
	fifoDir := makeJobDir(t, jobs, schema.JobKey("job-g"), nil)
	if err := syscall.Mkfifo(filepath.Join(fifoDir, handleFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// Too large, not JSON, incomplete.
	for id, content := range map[string]string{
		"job-h": `{"format":1,"job_id":"job-h","pad":"` + strings.Repeat("x", listMaxHandleSize) + `"}`,
		"job-i": "not json",
		"job-j": `{"format":1,"job_id":"job-j"}`,
	} {
		dir := makeJobDir(t, jobs, schema.JobKey(id), nil)
		if err := os.WriteFile(filepath.Join(dir, handleFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A valid handle in a dir whose name is no job key, and a regular file
	// named like a key.
	k := testHandle("job-k")
	makeJobDir(t, jobs, "not-a-key", &k)
	if err := os.WriteFile(filepath.Join(jobs, schema.JobKey("job-l")), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}

	hs, err := listWithDeadline(t, ws)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jobIDs(hs), []string{"job-a", "job-b"}; !slices.Equal(got, want) {
		t.Fatalf("ListHandles = %q, want %q", got, want)
	}
	if hs[0] != testHandle("job-a") {
		t.Errorf("handle of job-a = %+v, want %+v", hs[0], testHandle("job-a"))
	}
}

func TestListHandlesFollowsNoSymlinkedControlDir(t *testing.T) {
	// A valid jobs tree elsewhere, reached through a symlinked
	// .nvflare_slurm or a symlinked jobs dir, is not listed.
	elsewhere, otherJobs := newTestWorkspace(t)
	h := testHandle("job-a")
	makeJobDir(t, otherJobs, schema.JobKey("job-a"), &h)

	viaControl := t.TempDir()
	if err := os.Symlink(filepath.Join(elsewhere, controlDir), filepath.Join(viaControl, controlDir)); err != nil {
		t.Fatal(err)
	}
	viaJobs := t.TempDir()
	if err := os.Mkdir(filepath.Join(viaJobs, controlDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(otherJobs, filepath.Join(viaJobs, controlDir, jobsDirName)); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{viaControl, viaJobs} {
		hs, err := listWithDeadline(t, ws)
		if !errors.Is(err, dirfd.ErrSymlink) {
			t.Errorf("ListHandles(%s) = %v, %v; want a refusal of the symlink", ws, jobIDs(hs), err)
		}
	}
	// The real tree is listed.
	if hs, err := listWithDeadline(t, elsewhere); err != nil || len(hs) != 1 {
		t.Errorf("ListHandles(%s) = %v, %v; want job-a", elsewhere, jobIDs(hs), err)
	}
}

func TestListHandlesWorkspaceBehindASymlink(t *testing.T) {
	// The user's own path to the workspace may go through symlinks (a
	// home directory on a parallel filesystem): those are resolved.
	ws, jobs := newTestWorkspace(t)
	h := testHandle("job-a")
	makeJobDir(t, jobs, schema.JobKey("job-a"), &h)
	link := filepath.Join(t.TempDir(), "home")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	hs, err := listWithDeadline(t, link)
	if err != nil || !slices.Equal(jobIDs(hs), []string{"job-a"}) {
		t.Errorf("ListHandles(%s) = %v, %v; want job-a", link, jobIDs(hs), err)
	}
}

func TestListHandlesMissingWorkspace(t *testing.T) {
	for _, ws := range []string{filepath.Join(t.TempDir(), "none"), t.TempDir()} {
		hs, err := listWithDeadline(t, ws)
		if !errors.Is(err, fs.ErrNotExist) || hs != nil {
			t.Errorf("ListHandles(%s) = %v, %v; want fs.ErrNotExist", ws, hs, err)
		}
	}
}

func TestIsJobKey(t *testing.T) {
	if !isJobKey(schema.JobKey("x")) {
		t.Errorf("isJobKey(schema.JobKey(x)) = false")
	}
	for _, s := range []string{"", "abc", strings.ToUpper(schema.JobKey("x")), schema.JobKey("x") + "0", strings.Repeat("g", 64)} {
		if isJobKey(s) {
			t.Errorf("isJobKey(%q) = true", s)
		}
	}
}

// BenchmarkListHandles lists a workspace of 1000 job dirs, what a TAB
// after --job-id costs on a busy site.
func BenchmarkListHandles(b *testing.B) {
	ws, jobs := newTestWorkspace(b)
	for i := range 1000 {
		id := "job-" + strconv.Itoa(i)
		h := testHandle(id)
		makeJobDir(b, jobs, schema.JobKey(id), &h)
	}
	b.ReportAllocs()
	for b.Loop() {
		hs, err := ListHandles(ws)
		if err != nil || len(hs) != 1000 {
			b.Fatalf("ListHandles = %d handles, %v", len(hs), err)
		}
	}
}
