package prepare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/schema"
)

const bareConfig = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"

func writeKitFile(t testing.TB, f *fixture, rel, content string) {
	t.Helper()
	p := filepath.Join(f.kit, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *prepare.Error", err, err)
	}
	if pe.Code != code {
		t.Fatalf("code %q (%v), want %q", pe.Code, pe, code)
	}
	return pe
}

// assertUntouched checks that a failed prepare left out as it was and no
// staging directory beside it.
func assertUntouched(t *testing.T, out, before string) {
	t.Helper()
	if got := digest(t, out); got != before {
		t.Errorf("%s changed after a failed prepare", out)
	}
	if s := siblings(t, filepath.Dir(out), stagingPrefix(out)); len(s) > 0 {
		t.Errorf("staging directories left behind: %v", s)
	}
}

func TestRunProducesTheContractWorkspace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "site-1", exampleConfig(t, "slurm.yaml"))
	f.asUID(1000) // not root: root gets one more warning (TestRootPrepareWarns)
	writeKitFile(t, f, "local/resources.json", `{"stale": true}`)
	writeKitFile(t, f, "startup/start_slurm.sh", "stale\n")
	writeKitFile(t, f, "startup/docker.sh", "stale\n")
	if err := os.Chmod(filepath.Join(f.kit, "startup/client.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(f.kit, "startup/rootCA.pem"), old, old); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "ws")
	res := f.run(t, out)

	for _, gone := range []string{"local/resources.json", "startup/start.sh", "startup/stop_fl.sh", "startup/docker.sh"} {
		if _, err := os.Lstat(filepath.Join(out, gone)); !os.IsNotExist(err) {
			t.Errorf("%s should be removed (err %v)", gone, err)
		}
	}
	modes := map[string]os.FileMode{
		".": 0o700, "startup/start_slurm.sh": 0o700, "startup/parent.slurm": 0o700,
		"startup/sub_start.sh": 0o755, "startup/client.key": 0o600, "local/study_runtime.yaml": 0o644,
		"local/comm_config.json": 0o644, "local/resources.json.default": 0o644, "transfer": 0o755,
	}
	for rel, want := range modes {
		st, err := os.Stat(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %04o, want %04o", rel, st.Mode().Perm(), want)
		}
	}
	if st, _ := os.Stat(filepath.Join(out, "startup/rootCA.pem")); !st.ModTime().Equal(old) {
		t.Errorf("rootCA.pem mtime %v, want the kit's %v", st.ModTime(), old)
	}
	if got := readFile(t, filepath.Join(out, "startup/start_slurm.sh")); strings.Contains(string(got), "stale") {
		t.Error("stale start_slurm.sh was kept")
	}
	if res.Role != "client" || res.Name != "site-1" || res.Output != out || res.Runtime != "slurm" {
		t.Errorf("result %+v", res)
	}
	if res.StartCommand != "cd "+out+" && ./startup/start_slurm.sh" {
		t.Errorf("start_command %q", res.StartCommand)
	}
	wantSubmit := "sbatch --parsable --output=" + out + "/parent-slurm-%j.out " + out + "/startup/parent.slurm"
	if res.SubmitCommand != wantSubmit {
		t.Errorf("submit_command %q, want %q", res.SubmitCommand, wantSubmit)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "'resource_manager'") {
		t.Errorf("warnings %q, want one about the GPU resource manager with args", res.Warnings)
	}
	// The kit itself is untouched.
	if _, err := os.Stat(filepath.Join(f.kit, "startup/start.sh")); err != nil {
		t.Error("prepare modified the kit")
	}
}

func TestRerunReplacesTheWholeWorkspace(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	first := digest(t, out)
	if err := os.WriteFile(filepath.Join(out, "runtime-marker"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.run(t, out)
	if _, err := os.Stat(filepath.Join(out, "runtime-marker")); !os.IsNotExist(err) {
		t.Error("a file of the old workspace survived")
	}
	if digest(t, out) != first {
		t.Error("a re-run produced a different workspace")
	}
	if s := siblings(t, f.dir, stagingPrefix(out)); len(s) > 0 {
		t.Errorf("staging directories left: %v", s)
	}
}

func TestStartScriptRunsSubStartWithHostileWorkspacePath(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	marker := filepath.Join(f.dir, "marker")
	writeKitFile(t, f, "startup/sub_start.sh",
		"#!/usr/bin/env bash\nprintf '%s|%s' \"$NVFL_WORKSPACE\" \"$1\" > "+marker+"\n")
	if err := os.Chmod(filepath.Join(f.kit, "startup/sub_start.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A line break is refused in a workspace path (schema.CheckText, issue
	// 25 item 12); a tab, quotes, $, backticks and globs are quoted.
	out := filepath.Join(f.dir, "it's a $HOME `touch pwned` dir; \"x\" \t*")
	f.run(t, out)
	cmd := exec.Command(filepath.Join(out, "startup/start_slurm.sh"))
	cmd.Dir = f.dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start_slurm.sh: %v\n%s", err, msg)
	}
	if got := string(readFile(t, marker)); got != out+"|--once" {
		t.Errorf("sub_start.sh saw %q, want %q", got, out+"|--once")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "pwned")); err == nil {
		t.Error("the workspace path was executed")
	}
}

func TestParentScriptStartsTheParentFromASpoolCopy(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig+"parent:\n  sbatch_directives: {partition: batch, time: 1-00:00:00}\n  environment_setup: export PARENT_SETUP=done\n")
	out := filepath.Join(f.dir, "work space")
	f.run(t, out)
	marker := filepath.Join(f.dir, "started")
	// Stand in for the real start script to observe that parent.slurm runs it.
	start := filepath.Join(out, "startup/start_slurm.sh")
	if err := os.Remove(start); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(start, []byte("#!/usr/bin/env bash\nprintf '%s' \"$PARENT_SETUP\" > \""+marker+"\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	parent := readFile(t, filepath.Join(out, "startup/parent.slurm"))
	mustContain(t, "parent.slurm", parent, "#SBATCH --partition=batch\n#SBATCH --time=1-00:00:00\nset -euo pipefail\nexport PARENT_SETUP=done\nWORKSPACE_ROOT='"+out+"'\n")
	// sbatch runs a copy from its spool directory.
	spool := filepath.Join(f.dir, "spool", "slurm_script")
	if err := os.MkdirAll(filepath.Dir(spool), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spool, parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(spool).CombinedOutput(); err != nil {
		t.Fatalf("parent.slurm: %v\n%s", err, msg)
	}
	if got := string(readFile(t, marker)); got != "done" {
		t.Errorf("start script saw PARENT_SETUP=%q", got)
	}
	if err := exec.Command("bash", "-n", filepath.Join(out, "startup/parent.slurm")).Run(); err != nil {
		t.Errorf("bash -n parent.slurm: %v", err)
	}
}

func TestOutputIsRefused(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	file := filepath.Join(f.dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"the kit":           f.kit,
		"the kit's parent":  f.dir,
		"an existing file":  file,
		"a path with colon": filepath.Join(f.dir, "a:b"),
		"a path with comma": filepath.Join(f.dir, "a,b"),
	}
	for name, out := range cases {
		t.Run(name, func(t *testing.T) {
			before := digest(t, out)
			kitBefore := digest(t, f.kit)
			_, err := Run(context.Background(), f.opts(out))
			wantCode(t, err, errcode.InvalidOutput)
			assertUntouched(t, out, before)
			if digest(t, f.kit) != kitBefore {
				t.Error("the kit changed")
			}
		})
	}
}

func TestDefaultsAndOutputInsideTheKit(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	if err := os.Rename(f.config, filepath.Join(f.kit, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second run must not copy the first output into itself
		res, err := Run(context.Background(), Options{Kit: f.kit})
		if err != nil {
			t.Fatal(err)
		}
		if res.Output != filepath.Join(f.kit, "prepared", "slurm") {
			t.Fatalf("default output %s", res.Output)
		}
	}
	out := filepath.Join(f.kit, "prepared", "slurm")
	if _, err := os.Stat(filepath.Join(out, "prepared")); !os.IsNotExist(err) {
		t.Error("KIT/prepared was copied into the workspace")
	}
	if _, err := os.Stat(filepath.Join(out, "config.yaml")); err != nil {
		t.Error("the kit's config.yaml is part of the kit and should be copied like NVFlare does")
	}
	// Another output under KIT/prepared skips KIT/prepared (itself, the
	// default workspace and its staging dirs).
	custom := filepath.Join(f.kit, "prepared", "custom", "ws")
	for range 2 {
		if _, err := Run(context.Background(), Options{Kit: f.kit, Output: custom}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(custom, "prepared")); !os.IsNotExist(err) {
		t.Error("KIT/prepared was copied into the workspace under it")
	}
}

func TestJobArtifactsNeedForce(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	for _, job := range []string{"bbbb", "aaaa"} {
		dir := filepath.Join(out, ".nvflare_slurm", "jobs", job)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "batch.sh"), []byte("#!/bin/bash\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	before := digest(t, out)
	_, err := Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.JobsPresent)
	if !strings.Contains(pe.Message, "aaaa, bbbb") || !strings.Contains(pe.Hint, "--force") {
		t.Errorf("message %q hint %q should list the jobs and name --force", pe.Message, pe.Hint)
	}
	assertUntouched(t, out, before)

	opts := f.opts(out)
	opts.Force = true
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Discarded, ",") != "aaaa,bbbb" {
		t.Errorf("discarded %v", res.Discarded)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), ".nvflare_slurm/jobs/aaaa") {
		t.Errorf("warnings %q do not name the discarded job", res.Warnings)
	}
	if _, err := os.Stat(filepath.Join(out, ".nvflare_slurm", "jobs")); !os.IsNotExist(err) {
		t.Error("job artifacts survived a forced prepare")
	}
}

// TestKitSymlinks (issue 25 item 1): a symlink in the kit, to a regular
// file too, is refused with its path, and nothing it points at is read or
// copied: a root prepare copied a host file (a shadow file,
// /proc/self/environ) into the workspace, and --check printed it.
func TestKitSymlinks(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	target := filepath.Join(f.dir, "outside.txt")
	if err := os.WriteFile(target, []byte("host secret"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{target, "/proc/self/environ"} {
		p := filepath.Join(f.kit, "local", "linked.txt")
		os.Remove(p)
		if err := os.Symlink(link, p); err != nil {
			t.Fatal(err)
		}
		before := digest(t, out)
		_, err := Run(context.Background(), f.opts(out))
		pe := wantCode(t, err, errcode.InvalidKit)
		if len(pe.Problems) != 1 || pe.Problems[0].File != p || !strings.Contains(pe.Problems[0].Message, "a kit holds no symlinks") {
			t.Errorf("link to %s: problems %q, want one naming the link %s", link, pe.Problems, p)
		}
		assertUntouched(t, out, before)
		// prepare --check renders the same way: refused, nothing printed.
		_, err = Render(f.opts(out))
		pe = wantCode(t, err, errcode.InvalidKit)
		if strings.Contains(pe.Error()+pe.Problems.Error(), "host secret") {
			t.Errorf("--check printed the link's target: %v", pe)
		}
		os.Remove(p)
	}

	for name, link := range map[string]string{"directory": f.dir, "dangling": filepath.Join(f.dir, "missing")} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(f.kit, "local", "bad-link")
			os.Remove(p)
			if err := os.Symlink(link, p); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(p)
			before := digest(t, out)
			_, err := Run(context.Background(), f.opts(out))
			pe := wantCode(t, err, errcode.InvalidKit)
			if len(pe.Problems) != 1 || pe.Problems[0].File != p {
				t.Errorf("problems %q, want one naming the link %s", pe.Problems, p)
			}
			assertUntouched(t, out, before)
		})
	}
}

func TestSpecialFileInKitIsRefused(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	if err := syscall.Mkfifo(filepath.Join(f.kit, "local", "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "ws")
	_, err := Run(context.Background(), f.opts(out))
	wantCode(t, err, errcode.InvalidKit)
	assertUntouched(t, out, "absent")
}

func TestWriteFailureLeavesOutputAsItWas(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	before := digest(t, out)
	ws := f.render(t, out)
	// The kit loses a file between rendering and writing.
	if err := os.Remove(filepath.Join(f.kit, "startup", "rootCA.pem")); err != nil {
		t.Fatal(err)
	}
	err := write(context.Background(), ws)
	wantCode(t, err, errcode.PrepareFailed)
	assertUntouched(t, out, before)
}

func TestInterruptedPrepareChangesNothing(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	before := digest(t, out)
	if err := os.WriteFile(filepath.Join(f.kit, "local", "new-file"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, f.opts(out))
	wantCode(t, err, errcode.Interrupted)
	assertUntouched(t, out, before)
}

func TestReplacedComponentWarnings(t *testing.T) {
	cases := []struct {
		component string
		warn      string
	}{
		{`{"id": "process_launcher", "path": "nvflare.app_common.job_launcher.client_process_launcher.ClientProcessJobLauncher", "args": {}}`, ""},
		{`{"id": "process_launcher", "path": "my.site.Launcher"}`, "'process_launcher'"},
		{`{"id": "k8s_launcher", "path": "nvflare.app_opt.job_launcher.k8s_launcher.ClientK8sJobLauncher", "args": {"namespace": "x"}}`, "'k8s_launcher'"},
		{`{"id": "slurm_launcher", "path": "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher"}`, "'slurm_launcher'"},
		{`{"id": "resource_manager", "path": "nvflare.app_common.resource_managers.gpu_resource_manager.GPUResourceManager", "args": {}}`, ""},
		{`{"id": "resource_consumer", "path": "my.Consumer", "args": {}}`, "'resource_consumer'"},
		{`{"id": "other", "path": "my.Other", "args": {"a": 1}}`, ""},
	}
	for _, c := range cases {
		f := newFixture(t, "site-1", bareConfig)
		writeKitFile(t, f, "local/resources.json.default", `{"components": [`+c.component+`]}`)
		ws := f.render(t, filepath.Join(f.dir, "ws"))
		got := strings.Join(ws.Result.Warnings, "\n")
		if (c.warn == "") != (got == "") || !strings.Contains(got, c.warn) {
			t.Errorf("%s: warnings %q, want one containing %q", c.component, got, c.warn)
		}
		res, _ := ojson.Parse(readOrData(t, ws, "local/resources.json.default"))
		ids := []string{}
		for _, comp := range res.Get("components").Items {
			ids = append(ids, comp.Get("id").Str)
		}
		if want := ""; strings.Contains(c.component, `"other"`) {
			want = "other,"
			if strings.Join(ids, ",") != want+"resource_manager,slurm_launcher" {
				t.Errorf("components %v", ids)
			}
		} else if strings.Join(ids, ",") != "resource_manager,slurm_launcher" {
			t.Errorf("components %v", ids)
		}
	}
}

func readOrData(t *testing.T, ws *Workspace, rel string) []byte {
	t.Helper()
	data, err := ws.content(ws.File(rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestServerStorageRelocation(t *testing.T) {
	f := newFixture(t, "server", bareConfig)
	out := filepath.Join(f.dir, "server-ws")
	ws := f.render(t, out)
	res, err := ojson.Parse(readOrData(t, ws, "local/resources.json.default"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Get("snapshot_persistor").Get("args").Get("storage").Get("args").Get("root_dir").Str; got != out+"/snapshot-storage" {
		t.Errorf("snapshot root_dir %q", got)
	}
	found := false
	for _, c := range res.Get("components").Items {
		if c.Get("id").Str == "job_manager" {
			found = c.Get("args").Get("uri_root").Str == out+"/jobs-storage"
		}
		if c.Get("id").Str == launcherID && c.Get("path").Str != schema.ServerLauncherPath {
			t.Errorf("server kit got launcher %s", c.Get("path").Str)
		}
	}
	if !found {
		t.Error("job_manager uri_root not relocated")
	}

	writeKitFile(t, f, "local/resources.json.default", `{"snapshot_persistor": {"args": {}}, "components": []}`)
	ws = f.render(t, out)
	if !strings.Contains(strings.Join(ws.Result.Warnings, "\n"), "could not relocate snapshot storage") {
		t.Errorf("warnings %q", ws.Result.Warnings)
	}
}

func TestKitJSONProblems(t *testing.T) {
	cases := []struct{ file, content, want string }{
		{"local/comm_config.json", `{"internal": {"scheme": "shared-file", "resources": {"root_dir": "relative/dir"}}}`, "internal.resources.root_dir"},
		{"local/comm_config.json", `{"internal": {"scheme": "shared-file", "resources": {"root_dir": "/x", "connection_security": "mtls"}}}`, "internal.resources.connection_security"},
		{"local/comm_config.json", `{"internal": []}`, "internal: must be an object"},
		{"local/comm_config.json", `[1]`, "must contain a JSON object"},
		{"local/comm_config.json", "{\n  \"a\": 1,\n}", ":3:1: not valid JSON"},
		{"local/resources.json.default", `{"components": {}}`, "components: must be a list"},
		{"local/resources.json.default", `{"components": [1]}`, "components[0]: must be an object"},
	}
	for _, c := range cases {
		f := newFixture(t, "server", bareConfig)
		writeKitFile(t, f, c.file, c.content)
		out := filepath.Join(f.dir, "ws")
		_, err := Run(context.Background(), f.opts(out))
		if err == nil {
			t.Errorf("%s %s: no error", c.file, c.content)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || len(pe.Problems) == 0 {
			t.Errorf("%s: %v has no problems", c.content, err)
			continue
		}
		if got := pe.Problems.Error(); !strings.Contains(got, c.want) || !strings.Contains(got, c.file) {
			t.Errorf("%s: problems %q, want the file and %q", c.content, got, c.want)
		}
		assertUntouched(t, out, "absent")
	}
}

func TestInputProblemsAreAllReported(t *testing.T) {
	f := newFixture(t, "site-1", "runtime: slurm\njob_launcher:\n  sandbox: docker\n  python_path: /usr/bin/python3\n  bogus: 1\n")
	if err := os.Remove(filepath.Join(f.kit, "startup", "rootCA.pem")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "ws")
	_, err := Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.InvalidInput)
	text := pe.Problems.Error()
	for _, want := range []string{"job_launcher.sandbox", "job_launcher.bogus", "rootCA.pem"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems do not mention %s:\n%s", want, text)
		}
	}
	assertUntouched(t, out, "absent")

	// A server kit with a parent block.
	f = newFixture(t, "server", bareConfig+"parent: {}\n")
	_, err = Run(context.Background(), f.opts(out))
	wantCode(t, err, errcode.InvalidInput)
	assertUntouched(t, out, "absent")
}

func TestImageRealPathIsRecorded(t *testing.T) {
	f := newFixture(t, "site-1", "runtime: slurm\njob_launcher:\n  sandbox: apptainer\n  image: @IMAGE@\n  python_path: /usr/bin/python3\n")
	link := filepath.Join(f.dir, "current.sif")
	if err := os.Symlink(f.image, link); err != nil {
		t.Fatal(err)
	}
	f.writeConfig(t, strings.ReplaceAll("runtime: slurm\njob_launcher:\n  sandbox: apptainer\n  image: LINK\n  python_path: /usr/bin/python3\n", "LINK", link))
	ws := f.render(t, filepath.Join(f.dir, "ws"))
	res, _ := ojson.Parse(readOrData(t, ws, "local/resources.json.default"))
	args := res.Get("components").Items[len(res.Get("components").Items)-1].Get("args")
	if got := args.Get("image").Str; got != f.image {
		t.Errorf("image %q, want the real path %q", got, f.image)
	}
}

func TestLauncherArgsPortRangeOnlyWhenSet(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  string
	}{
		{"", ""},
		{"  multi_node_port_range: [29500, 29599]\n", "[\n    29500,\n    29599\n]"},
		{"  multi_node_port_range: 29500-29599\n", "[\n    29500,\n    29599\n]"},
	} {
		f := newFixture(t, "site-1", bareConfig+c.extra)
		ws := f.render(t, filepath.Join(f.dir, "ws"))
		res, _ := ojson.Parse(readOrData(t, ws, "local/resources.json.default"))
		items := res.Get("components").Items
		args := items[len(items)-1].Get("args")
		got := args.Get("multi_node_port_range")
		if c.want == "" {
			if got != nil {
				t.Errorf("multi_node_port_range written although unset")
			}
			continue
		}
		if got == nil || strings.TrimSpace(string(ojson.Marshal(got))) != c.want {
			t.Errorf("%q: got %v", c.extra, got)
		}
		if last := args.Members[len(args.Members)-1].Key; last != "workspace_path" {
			t.Errorf("last key %q, want workspace_path", last)
		}
	}
}

func TestDiff(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")

	ws := f.render(t, out)
	d, err := Diff(ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) == 0 || d.Changes[0].Kind != Added {
		t.Fatalf("a missing workspace should be all additions: %+v", d.Changes)
	}
	assertUntouched(t, out, "absent")

	f.run(t, out)
	if d, err = Diff(f.render(t, out)); err != nil || len(d.Changes) != 0 {
		t.Fatalf("fresh workspace differs: %+v %v\n%s", d.Changes, err, d.Text)
	}

	// Drift: an edited script, an extra file, a changed mode, a removed file.
	start := filepath.Join(out, "startup", "start_slurm.sh")
	if err := os.WriteFile(start, []byte("#!/usr/bin/env bash\nset -euo pipefail\nexport NVFL_WORKSPACE=/elsewhere\nexec \"$NVFL_WORKSPACE/startup/sub_start.sh\" --once\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "extra.txt"), []byte("extra\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(out, "local"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, "local", "privacy.json.sample")); err != nil {
		t.Fatal(err)
	}
	before := digest(t, out)
	d, err = Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]ChangeKind{}
	for _, c := range d.Changes {
		kinds[c.Path] = c.Kind
	}
	want := map[string]ChangeKind{
		"startup/start_slurm.sh": Modified, "extra.txt": Removed, "local": modeOnly, "local/privacy.json.sample": Added,
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("changes %v, want %v", kinds, want)
	}
	for _, line := range []string{
		"--- a/ws/startup/start_slurm.sh\n+++ b/ws/startup/start_slurm.sh\n",
		"-export NVFL_WORKSPACE=/elsewhere\n+export NVFL_WORKSPACE=" + out + "\n",
		"--- a/ws/extra.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-extra\n",
		"Mode differs: ws/local 0700 -> 0755\n",
		"--- /dev/null\n+++ b/ws/local/privacy.json.sample\n",
	} {
		if !strings.Contains(d.Text, line) {
			t.Errorf("diff lacks %q:\n%s", line, d.Text)
		}
	}
	if digest(t, out) != before {
		t.Error("Diff changed the workspace")
	}
}

func TestOutputPathIsResolvedLikePython(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	real := filepath.Join(f.dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(f.dir, "link")); err != nil {
		t.Fatal(err)
	}
	// Through a symlinked parent, with a relative, unnormalised spelling.
	t.Chdir(f.dir)
	res, err := Run(context.Background(), Options{Kit: f.kit, Config: f.config, Output: "link/./x/../ws"})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(real, "ws")
	if res.Output != want {
		t.Errorf("output %q, want %q", res.Output, want)
	}
	mustContain(t, "start_slurm.sh", readFile(t, filepath.Join(want, "startup", "start_slurm.sh")), "export NVFL_WORKSPACE="+want+"\n")
}

func TestModesAreExactUnderAnyUmask(t *testing.T) {
	for _, mask := range []int{0o077, 0o000} {
		t.Run(fmt.Sprintf("umask %03o", mask), func(t *testing.T) {
			f := newFixture(t, "site-1", bareConfig)
			if err := os.Chmod(filepath.Join(f.kit, "local", "privacy.json.sample"), 0o664); err != nil {
				t.Fatal(err)
			}
			old := syscall.Umask(mask)
			defer syscall.Umask(old)
			out := filepath.Join(f.dir, "ws")
			f.run(t, out)
			for rel, want := range map[string]os.FileMode{
				"local/privacy.json.sample": 0o664, "startup/sub_start.sh": 0o755, "local": 0o755,
				"local/comm_config.json": 0o644, "startup/start_slurm.sh": 0o700, ".": 0o700,
			} {
				st, err := os.Stat(filepath.Join(out, rel))
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != want {
					t.Errorf("%s mode %04o, want %04o", rel, st.Mode().Perm(), want)
				}
			}
		})
	}
}
