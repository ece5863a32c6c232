package prepare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
)

// A failed prepare leaves nothing behind, not even the parent directories
// of the output that it created.
func TestFailedWriteRemovesTheParentsItCreated(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "new", "nested", "ws")
	ws := f.render(t, out)
	// The kit loses a file between rendering and writing.
	if err := os.Remove(filepath.Join(f.kit, "startup", "rootCA.pem")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, Write(context.Background(), ws), errcode.PrepareFailed)
	if _, err := os.Lstat(filepath.Join(f.dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the failed prepare left the parent directories it created: %v", err)
	}
	// An interrupted one too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantCode(t, Write(ctx, ws), errcode.Interrupted)
	if _, err := os.Lstat(filepath.Join(f.dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the interrupted prepare left the parent directories it created: %v", err)
	}
}

// Every job_manager is relocated (one with args keeps its key order, one
// without gets args), and every launcher id of the drop list goes.
func TestEveryJobManagerIsRelocatedAndEveryLauncherDropped(t *testing.T) {
	f := newFixture(t, "server", bareConfig)
	writeKitFile(t, f, "local/resources.json.default", `{"components": [
		{"id": "job_manager", "path": "a.JobManager", "args": {"uri_root": "/old", "job_store_id": "x"}},
		{"id": "docker_launcher", "path": "nvflare.app_opt.job_launcher.docker_launcher.ServerDockerJobLauncher"},
		{"id": "job_manager", "path": "b.JobManager"},
		{"id": "process_launcher"}, {"id": "k8s_launcher"}, {"id": "slurm_launcher"},
		{"id": "resource_consumer"}, {"id": "resource_manager"}
	]}`)
	out := filepath.Join(f.dir, "ws")
	ws := f.render(t, out)
	got := string(readOrData(t, ws, "local/resources.json.default"))
	want := `{
    "components": [
        {
            "id": "job_manager",
            "path": "a.JobManager",
            "args": {
                "uri_root": "` + out + `/jobs-storage",
                "job_store_id": "x"
            }
        },
        {
            "id": "job_manager",
            "path": "b.JobManager",
            "args": {
                "uri_root": "` + out + `/jobs-storage"
            }
        },
        {
            "id": "resource_manager",
            "path": "nvflare.app_common.resource_managers.passthrough_resource_manager.PassthroughResourceManager",
            "args": {}
        },
        {
            "id": "slurm_launcher",
            "path": "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher",
`
	if !strings.HasPrefix(got, want) {
		t.Errorf("resources.json.default:\n%s\nwant it to start with:\n%s", got, want)
	}
	if len(ws.Result.Warnings) != 0 {
		t.Errorf("warnings %q for built-in components without args", ws.Result.Warnings)
	}
}

// A server workspace keeps its job store and snapshots inside the
// workspace (contract §4.4): replacing it would lose every stored job, so
// it needs --force like job artifacts do.
func TestServerJobStoreNeedsForce(t *testing.T) {
	f := newFixture(t, "server", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	// Empty stores hold nothing to lose.
	for _, d := range []string{"jobs-storage", "snapshot-storage"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.run(t, out)
	for _, p := range []string{"jobs-storage/6a1c-job/meta", "snapshot-storage/6a1c-job"} {
		if err := os.MkdirAll(filepath.Join(out, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, p), []byte("stored"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := digest(t, out)
	_, err := Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.JobsPresent)
	for _, want := range []string{"jobs-storage/6a1c-job", "snapshot-storage/6a1c-job"} {
		if !strings.Contains(pe.Message, want) {
			t.Errorf("message %q does not list %s", pe.Message, want)
		}
	}
	if !strings.Contains(pe.Hint, "--force") {
		t.Errorf("hint %q does not name --force", pe.Hint)
	}
	assertUntouched(t, out, before)

	opts := f.opts(out)
	opts.Force = true
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.DiscardedStorage, ","); got != "jobs-storage/6a1c-job,snapshot-storage/6a1c-job" {
		t.Errorf("discarded storage %q", got)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), filepath.Join(out, "jobs-storage", "6a1c-job")) {
		t.Errorf("warnings %q do not name the discarded stored job", res.Warnings)
	}
	if _, err := os.Stat(filepath.Join(out, "jobs-storage")); !os.IsNotExist(err) {
		t.Error("the job store survived a forced prepare")
	}
}

// --check names file types in words and reports a removed directory the
// way diff(1) does ("Only in DIR: NAME").
func TestDiffWording(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	p := filepath.Join(out, "local", "study_runtime.yaml")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub_start.sh", filepath.Join(out, "startup", "start_slurm.sh.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, "startup", "start_slurm.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(out, "startup", "start_slurm.sh.tmp"), filepath.Join(out, "startup", "start_slurm.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "local", "extra", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	details := map[string]string{}
	for _, c := range d.Changes {
		details[c.Path] = c.Detail
	}
	for p, want := range map[string]string{
		"local/study_runtime.yaml": "a file would replace the directory",
		"startup/start_slurm.sh":   "a file would replace the symlink",
		"local/extra":              "directory would be removed with its content",
	} {
		if details[p] != want {
			t.Errorf("%s: %q, want %q", p, details[p], want)
		}
	}
	for _, want := range []string{
		"File type differs: ws/local/study_runtime.yaml (directory on disk)\n",
		"File type differs: ws/startup/start_slurm.sh (symlink on disk)\n",
		"Only in " + filepath.Join(out, "local") + ": extra/\n",
	} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("diff text does not contain %q:\n%s", want, d.Text)
		}
	}
}
