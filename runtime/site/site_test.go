package site

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/schema"
)

// recorder answers sbatch with a job id and records every command.
type recorder struct {
	mu    sync.Mutex
	calls []scheduler.Command
}

func (r *recorder) Run(_ context.Context, c scheduler.Command) scheduler.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	switch filepath.Base(c.Argv[0]) {
	case "sbatch":
		if c.Argv[1] == "--version" {
			return scheduler.Result{Stdout: []byte("slurm 24.11.5\n")}
		}
		return scheduler.Result{Stdout: []byte("4242\n")}
	}
	return scheduler.Result{}
}

func writeJSON(t testing.TB, p string, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientWorkspace lays out a minimal prepared client workspace whose executables
// are four stub files in bin/.
func clientWorkspace(t testing.TB) string {
	return workspaceWith(t, 10, "#!/bin/sh\n")
}

// workspaceWith is workspace with a poll interval and the text of the four
// stand-in commands.
func workspaceWith(t testing.TB, poll float64, script string) string {
	t.Helper()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	bin := filepath.Join(base, "bin")
	for _, d := range []string{ws, filepath.Join(ws, "startup"), filepath.Join(ws, "local"), filepath.Join(ws, "job-1"), bin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exe := map[string]any{"apptainer": nil, "srun": nil}
	for _, n := range []string{"sbatch", "squeue", "sacct", "scancel"} {
		os.WriteFile(filepath.Join(bin, n), []byte(script), 0o755)
		exe[n] = filepath.Join(bin, n)
	}
	writeJSON(t, filepath.Join(ws, "startup", "fed_client.json"), map[string]any{"client": map[string]any{"fqsn": "site-1"}})
	writeJSON(t, filepath.Join(ws, "local", "comm_config.json"), map[string]any{"allow_adhoc_conns": false, "backbone_conn_gen": 2,
		"internal": map[string]any{"scheme": "tcp", "resources": map[string]any{"host": "0.0.0.0", "port": 8102, "connection_security": "clear"}}})
	writeJSON(t, filepath.Join(ws, "local", "resources.json.default"), map[string]any{"format_version": 2, "components": []any{
		map[string]any{"id": "slurm_launcher", "path": "nvflare.app_opt.job_launcher.slurm.ClientSlurmJobLauncher", "args": map[string]any{
			"sandbox": "none", "python_path": "/usr/bin/python3", "executables": exe, "image": nil,
			"internal_port": 8102.0, "sbatch_directives": map[string]any{}, "setup": "", "forward_env": []any{},
			"parent_host": "parent.internal", "poll_interval": poll, "pending_timeout": 600.0,
			"submit_timeout": 30.0, "query_timeout": 10.0, "cancel_timeout": 10.0, "workspace_path": ws,
		}},
	}})
	return ws
}

func request(ws string) []byte { return requestFor(ws, "job-1") }

func requestFor(ws, jobID string) []byte {
	data, _ := json.Marshal(map[string]any{"job_id": jobID, "site": "site-1", "role": "client",
		"meta": map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"pending_timeout": 42}}}},
		"job_args": map[string]any{"workspace": []any{"-m", ws}, "job_id": []any{"-n", jobID},
			"parent_url": []any{"-p", "tcp://localhost:8102"}, "parent_conn_sec": []any{"--parent_conn_sec", "clear"},
			"auth_token": []any{"-t", "tok-SECRET"}}})
	return data
}

func TestLaunchThroughCompiler(t *testing.T) {
	ws := clientWorkspace(t)
	rec := &recorder{}
	environ := []string{"PATH=/usr/bin", "SBATCH_PARTITION=evil", "NVFLARE_JOB_AUTH_TOKEN=leak"}
	rt, err := Open(context.Background(), ws, Options{Environ: environ, CheckScheduler: true, Runner: rec})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Version.String() != "24.11.5" {
		t.Fatalf("version %v", rt.Version)
	}
	h, _, err := rt.LaunchWithNotes(context.Background(), "req.json", request(ws))
	if err != nil {
		t.Fatal(err)
	}
	info := h.Info()
	if info.SlurmJobID != "4242" || info.PendingTimeout != 42 || info.Marker != schema.CommentMarker(ws, "job-1") {
		t.Fatalf("handle %+v", info)
	}
	if rt.Manager.JobDir("job-1") != schema.JobDir(ws, "job-1") {
		t.Fatal("the runtime and the compiler disagree on the job dir")
	}
	for _, f := range []string{"batch.sh", "secret.env", "handle.json"} {
		if _, err := os.Stat(filepath.Join(rt.Manager.JobDir("job-1"), f)); err != nil {
			t.Fatal(err)
		}
	}
	sb := rec.calls[len(rec.calls)-1]
	if sb.Argv[0] != rt.Client.Paths.Sbatch || sb.Argv[1] != "--parsable" {
		t.Fatalf("sbatch argv %v", sb.Argv)
	}
	all := strings.Join(append(append([]string{}, sb.Argv...), sb.Env...), "\n")
	if strings.Contains(all, "tok-SECRET") || strings.Contains(all, "leak") || strings.Contains(all, "SBATCH_PARTITION") {
		t.Fatalf("sbatch argv/env leak:\n%s", all)
	}
	if !strings.Contains(all, "PATH=/usr/bin") || !strings.Contains(all, "LC_ALL=C") {
		t.Fatalf("sbatch env lost PATH or LC_ALL:\n%s", all)
	}
	// A leftover dir refuses the launch and is left alone.
	rt2, err := Open(context.Background(), ws, Options{Environ: environ, Runner: rec})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(rt.Manager.JobDir("job-1"), "handle.json"))
	_, _, err = rt2.LaunchWithNotes(context.Background(), "req.json", request(ws))
	if err == nil || !strings.Contains(err.Error(), "stale artifacts") {
		t.Fatalf("stale: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rt.Manager.JobDir("job-1"), "batch.sh")); err != nil {
		t.Fatal("refused launch removed the stale artifacts")
	}
}

func TestOpenRefusesBadWorkspace(t *testing.T) {
	ws := clientWorkspace(t)
	os.Chmod(ws, 0o755)
	if _, err := Open(context.Background(), ws, Options{Runner: &recorder{}}); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Open(context.Background(), filepath.Join(ws, "nope"), Options{Runner: &recorder{}}); err == nil {
		t.Fatal("missing workspace accepted")
	}
}

// No secret value reaches any scheduler command's environment: neither
// sbatch --version and the accounting probe of the bootstrap, nor squeue,
// sacct and scancel (the parent's environment holds the study secrets and
// possibly bootstrap credentials).
func TestSecretsNeverInQueryEnvironment(t *testing.T) {
	ws := clientWorkspace(t)
	os.WriteFile(filepath.Join(ws, "local", "study_runtime.yaml"), []byte(
		"format_version: 2\nstudies:\n  s1:\n    secret_env:\n      DB_PASSWORD:\n        source: PARENT_DB_PW\n"), 0o600)
	rec := &recorder{}
	environ := []string{"PATH=/usr/bin", "PARENT_DB_PW=pw-SECRET", "DB_PASSWORD=pw2-SECRET", "NVFLARE_JOB_AUTH_TOKEN=tok-SECRET", "SLURM_CONF=/etc/slurm/slurm.conf"}
	rt, err := Open(context.Background(), ws, Options{Environ: environ, CheckScheduler: true, Runner: rec})
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := rt.LaunchWithNotes(context.Background(), "req.json", request(ws))
	if err != nil {
		t.Fatal(err)
	}
	h.Poll(context.Background())
	h.Terminate(context.Background())
	if len(rec.calls) < 4 {
		t.Fatalf("calls: %d", len(rec.calls))
	}
	for _, c := range rec.calls {
		env := strings.Join(c.Env, "\n")
		if strings.Contains(env, "SECRET") {
			t.Errorf("%v ran with a secret in its environment:\n%s", c.Argv, env)
		}
		if !strings.Contains(env, "SLURM_CONF=/etc/slurm/slurm.conf") || !strings.Contains(env, "LC_ALL=C") {
			t.Errorf("%v lost SLURM_CONF or LC_ALL:\n%s", c.Argv, env)
		}
	}
}
