package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// workerScript stands in for the NVFlare worker: batch.sh execs it as
// "<python_path> -u -m <module> <args…>" in the run dir. It records whether
// the secret file still existed and its environment, then sources the run
// dir's ./behaviour (e.g. "exit 103" or a wait for a release file).
const workerScript = `#!/bin/bash
ws=""; job=""
while [ $# -gt 0 ]; do
  case $1 in -m) ws=$2; shift;; -n) job=$2; shift;; esac
  shift
done
key=$(printf %s "$job" | sha256sum | cut -c1-64)
{
  if [ -e "$ws/.nvflare_slurm/jobs/$key/secret.env" ]; then echo "secret_file=present"; else echo "secret_file=gone"; fi
  env | sort
} > worker-seen.txt
. ./behaviour
`

// countingWrapper records each call of a Slurm command, then runs it.
const countingWrapper = `#!/bin/bash
printf '%s %s\n' "$(basename "$0")" "$*" >> "$(dirname "$0")/calls"
exec /usr/bin/$(basename "$0") "$@"
`

// sbatchRecorder records sbatch's argv and environment (what ps and
// /proc/<pid>/environ would show), then runs it.
const sbatchRecorder = `#!/bin/bash
printf '%s %s\n' "$(basename "$0")" "$*" >> "$(dirname "$0")/calls"
if [ "$1" != --version ]; then
  printf '%s\n' "$@" > "$(dirname "$0")/sbatch-argv.$$"
  env > "$(dirname "$0")/sbatch-env.$$"
fi
exec /usr/bin/sbatch "$@"
`

var (
	buildOnce sync.Once
	builtCLI  string
	buildErr  error
)

// buildCLI builds flare-slurm (static) once per test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flare-slurm-it-")
		if err != nil {
			buildErr = err
			return
		}
		builtCLI = filepath.Join(dir, "flare-slurm")
		cmd := exec.Command("go", "build", "-o", builtCLI, "github.com/flare-slurm/flare-slurm/cmd/flare-slurm")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build flare-slurm: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtCLI
}

// site is one prepared workspace inside the cluster's root.
type site struct {
	t     *testing.T
	c     *slurmtest.Cluster
	base  string // private dir inside the root
	ws    string // the workspace
	bin   string // flare-slurm inside the root
	tools string // counting wrappers
	poll  float64
	pend  float64
	env   []string // added to the environment of every flare-slurm run (the parent's)
	// sandbox is the site's sandbox (siteOpts.sandbox).
	sandbox string
}

type siteOpts struct {
	poll, pending float64
	wrappers      bool   // executables point at counting wrappers
	partition     string // default: the cluster's single-node partition
	wsName        string // the workspace directory's name (default "ws")
	// sandbox is the site's sandbox (default none); apptainer and pyxis run
	// the real runtime with the cluster's worker image, the worker script
	// then lives in startup/, which every container sees at its own path.
	sandbox string
	// launcherArgs are more slurm_launcher args (time_limit_signal).
	launcherArgs map[string]any
}

// sandboxes are the three sandboxes of contract §8, each run for real.
var sandboxes = []string{"none", slurmtest.SandboxApptainer, slurmtest.SandboxPyxis}

// forEachSandbox runs test once per sandbox as parallel subtests.
func forEachSandbox(t *testing.T, test func(t *testing.T, sandbox string)) {
	for _, sb := range sandboxes {
		t.Run(sb, func(t *testing.T) {
			t.Parallel()
			test(t, sb)
		})
	}
}

func newSite(t *testing.T, c *slurmtest.Cluster, o siteOpts) *site {
	t.Helper()
	if o.poll == 0 {
		o.poll = 1
	}
	if o.pending == 0 {
		o.pending = 600
	}
	if o.partition == "" {
		o.partition = c.Partition
	}
	s := &site{t: t, c: c, base: c.TempDir(t), poll: o.poll, pend: o.pending}
	s.bin = path.Join(s.base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), s.bin)
	if o.wsName == "" {
		o.wsName = "ws"
	}
	s.ws = path.Join(s.base, o.wsName)
	s.tools = path.Join(s.base, "tools")
	for _, d := range []string{s.ws, path.Join(s.ws, "startup"), path.Join(s.ws, "local"), s.tools} {
		c.Mkdir(t, d, 0o700)
	}
	worker := path.Join(s.tools, "worker")
	var image any
	if o.sandbox == "" {
		o.sandbox = "none"
	}
	if o.sandbox != "none" {
		image = c.RequireContainers(t, o.sandbox)
		worker = path.Join(s.ws, "startup", "worker")
	}
	s.sandbox = o.sandbox
	c.WriteFile(t, worker, []byte(workerScript), 0o700)
	exe := map[string]any{"sbatch": nil, "squeue": nil, "sacct": nil, "scancel": nil, "apptainer": nil, "srun": nil}
	if o.wrappers {
		for _, n := range []string{"squeue", "sacct", "scancel"} {
			c.WriteFile(t, path.Join(s.tools, n), []byte(countingWrapper), 0o700)
			exe[n] = path.Join(s.tools, n)
		}
	}
	c.WriteFile(t, path.Join(s.tools, "sbatch"), []byte(sbatchRecorder), 0o700)
	exe["sbatch"] = path.Join(s.tools, "sbatch")
	s.json(path.Join(s.ws, "startup", "fed_client.json"), map[string]any{"client": map[string]any{"fqsn": "site-1"}})
	s.json(path.Join(s.ws, "local", "comm_config.json"), map[string]any{"allow_adhoc_conns": false, "backbone_conn_gen": 2,
		"internal": map[string]any{"scheme": "tcp", "resources": map[string]any{"host": "0.0.0.0", "port": 8102, "connection_security": "clear"}}})
	args := map[string]any{
		"sandbox": o.sandbox, "python_path": worker, "executables": exe, "image": image,
		"internal_port": 8102.0, "sbatch_directives": map[string]any{"partition": o.partition}, "setup": "", "forward_env": []any{},
		"parent_host": "localhost", "poll_interval": o.poll, "pending_timeout": o.pending,
		"submit_timeout": 30.0, "query_timeout": 10.0, "cancel_timeout": 10.0, "workspace_path": s.ws,
	}
	for k, v := range o.launcherArgs {
		args[k] = v
	}
	s.json(path.Join(s.ws, "local", "resources.json.default"), map[string]any{"format_version": 2, "components": []any{
		map[string]any{"id": "resource_manager", "path": "nvflare.app_common.resource_managers.passthrough_resource_manager.PassthroughResourceManager", "args": map[string]any{}},
		map[string]any{"id": "slurm_launcher", "path": "nvflare.app_opt.job_launcher.slurm.ClientSlurmJobLauncher", "args": args},
	}})
	return s
}

func (s *site) json(p string, v any) {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		s.t.Fatal(err)
	}
	s.c.WriteFile(s.t, p, append(data, '\n'), 0o600)
}

// job prepares the run dir of jobID with a worker behaviour and returns the
// launch request file and the secret token it carries.
func (s *site) job(jobID, behaviour string, meta map[string]any) (req, token string) {
	s.t.Helper()
	run := path.Join(s.ws, jobID)
	if _, err := os.Stat(s.c.HostPath(run)); err != nil {
		s.c.Mkdir(s.t, run, 0o700)
	}
	s.c.WriteFile(s.t, path.Join(run, "behaviour"), []byte(behaviour+"\n"), 0o600)
	b := make([]byte, 8)
	rand.Read(b)
	token = "tok-" + hex.EncodeToString(b)
	if meta == nil {
		meta = map[string]any{}
	}
	req = path.Join(s.base, "req-"+jobID+".json")
	s.json(req, map[string]any{"job_id": jobID, "site": "site-1", "role": "client", "meta": meta,
		"job_args": map[string]any{
			"workspace": []any{"-m", s.ws}, "startup_dir": []any{"-w", path.Join(s.ws, "startup")},
			"job_id": []any{"-n", jobID}, "client_name": []any{"-c", "site-1"},
			"parent_url": []any{"-p", "tcp://localhost:8102"}, "parent_conn_sec": []any{"--parent_conn_sec", "clear"},
			"auth_token": []any{"-t", token},
		}})
	return req, token
}

// run runs flare-slurm inside the root as the test account and returns
// stdout, stderr and the exit code.
//
// A freshly copied binary can fail to start with ETXTBSY while a parallel
// test forks: the child holds the copy's write descriptor until it execs
// (golang/go#22315). The start (nothing ran yet) is retried for up to 5 s.
func (s *site) run(ctx context.Context, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cmd := s.c.Command(ctx, s.bin, args...)
		cmd.Env = append(cmd.Env, s.env...)
		out.Reset()
		errb.Reset()
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		if !errors.Is(err, syscall.ETXTBSY) || time.Now().After(deadline) {
			break
		}
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("flare-slurm %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

type launched struct {
	SlurmJobID string `json:"slurm_job_id"`
	JobName    string `json:"job_name"`
	JobDir     string `json:"job_dir"`
}

func (s *site) launch(req string) launched {
	s.t.Helper()
	out, errs, code := s.run(context.Background(), "launch", "--workspace", s.ws, "--request", req, "--json")
	if code != 0 {
		s.t.Fatalf("launch exit %d: %s %s", code, out, errs)
	}
	var env struct{ Data launched }
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Data.SlurmJobID == "" {
		s.t.Fatalf("launch output %q: %v", out, err)
	}
	return env.Data
}

type status struct {
	JobID      string `json:"job_id"`
	SlurmJobID string `json:"slurm_job_id"`
	State      string `json:"state"`
	Terminal   bool   `json:"terminal"`
	ReturnCode int    `json:"return_code"`
	Detail     string `json:"detail"`
	// a pending job's reason, since when and its pending timeout
	Reason         string  `json:"reason"`
	PendingSince   string  `json:"pending_since"`
	PendingTimeout float64 `json:"pending_timeout"`
}

func (s *site) status(jobID string) status {
	s.t.Helper()
	out, errs, code := s.run(context.Background(), "status", "--workspace", s.ws, "--job-id", jobID, "--json")
	if code != 0 {
		s.t.Fatalf("status exit %d: %s %s", code, out, errs)
	}
	var env struct{ Data status }
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		s.t.Fatalf("status output %q: %v", out, err)
	}
	return env.Data
}

// wait runs flare-slurm wait and checks that its exit code is the return
// code it prints.
func (s *site) wait(jobID string, limit time.Duration) status {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, errs, code := s.run(ctx, "wait", "--workspace", s.ws, "--job-id", jobID, "--json")
	var env struct{ Data status }
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		s.t.Fatalf("wait exit %d output %q %s: %v", code, out, errs, err)
	}
	if code != env.Data.ReturnCode || !env.Data.Terminal {
		s.t.Fatalf("wait exited %d but printed %+v", code, env.Data)
	}
	return env.Data
}

// until polls status until cond holds.
func (s *site) until(jobID string, limit time.Duration, what string, cond func(status) bool) status {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st := s.status(jobID)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s: waited %v for %s; last status %+v", jobID, limit, what, st)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *site) jobDir(jobID string) string {
	sum := sha256.Sum256([]byte(jobID))
	return path.Join(s.ws, ".nvflare_slurm", "jobs", hex.EncodeToString(sum[:]))
}

func (s *site) exists(p string) bool {
	_, err := os.Lstat(s.c.HostPath(p))
	return err == nil
}

func (s *site) read(p string) string {
	data, err := os.ReadFile(s.c.HostPath(p))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(data)
}

// release lets a worker waiting on its release file finish.
func (s *site) release(jobID string) {
	s.c.WriteFile(s.t, path.Join(s.ws, jobID, "release"), nil, 0o600)
}

// holdUntilRelease is a behaviour that waits (at most 5 min) for release.
const holdUntilRelease = `for i in $(seq 1 3000); do [ -e release ] && break; sleep 0.1; done`

// blocker holds the only node so that the next job stays pending.
func blocker(t *testing.T, c *slurmtest.Cluster, dir string) string {
	t.Helper()
	out := c.Run(t, "sbatch", "--parsable", "--exclusive", "--partition="+c.Partition, "--output=/dev/null",
		"--chdir="+dir, "--job-name=blocker", "--wrap=sleep 300")
	id := strings.TrimSpace(out)
	t.Cleanup(func() { c.Command(context.Background(), "scancel", id).Run() })
	for i := 0; i < 100; i++ {
		if strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", id, "-o", "%T")) == "RUNNING" {
			return id
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("blocker job %s did not start", id)
	return ""
}

func countLines(s, prefix string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
