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
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// federation is a provisioned NVFlare project (server + site-1) whose two
// parents run on the cluster's login side from workspaces prepared with
// --launcher flare-slurm.
type federation struct {
	t        *testing.T
	c        *slurmtest.Cluster
	base     string // private dir inside the root
	kits     string // provisioned kits
	admin    string // the admin kit
	bin      string // flare-slurm inside the root
	server   string // the server's workspace
	client   string // site-1's workspace
	jobsSrc  string // where job folders are built
	hold     string // the server site's own partition (set DOWN to hold its jobs)
	parents  []*exec.Cmd
	logFiles []string // host paths of the parents' output
	// parentEnv is added to the parents' environment.
	parentEnv []string
	// dumpJobs caps how many jobs' logs a failure prints (0: all).
	dumpJobs int
}

// fedRun is what a federation test learns about one NVFlare job.
type fedRun struct {
	name, jobID, status string
	slurm               map[string][2]string // job name → (Slurm job id, sacct state)
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// fedSandboxes are the sandboxes of the server's and site-1's workers.
type fedSandboxes struct{ server, client string }

// newFederation provisions the project, prepares both kits with the
// flare-slurm runtime (each site's workers in its sandbox: none runs the
// root's python3 with NVFlare on its path, a container sandbox the
// cluster's worker image, where NVFlare is installed) and starts both
// parents.
func newFederation(t *testing.T, c *slurmtest.Cluster, ctx context.Context, sb fedSandboxes) *federation {
	f := provisionFederation(t, c, ctx, 1)
	python := path.Join(f.base, "python")

	// The server site's jobs go to a partition of its own on the cluster's
	// node, so that the pending-timeout case can hold them (State=DOWN)
	// without holding anyone else's.
	b := make([]byte, 4)
	rand.Read(b)
	f.hold = "fle2e" + hex.EncodeToString(b)
	if out, err := c.RootCommand(ctx, "scontrol", "create", "PartitionName="+f.hold, "Nodes="+c.Node, "State=UP", "MaxTime=INFINITE").CombinedOutput(); err != nil {
		t.Fatalf("scontrol create partition: %v\n%s", err, out)
	}
	t.Cleanup(func() { c.RootCommand(context.Background(), "scontrol", "delete", "PartitionName="+f.hold).Run() })

	f.server = f.prepare(ctx, f.bin, c.LoginHost, "server", f.workerConfig(sb.server, python), f.hold, fedPrepare{launcher: "flare-slurm", poll: 1})
	f.client = f.prepare(ctx, f.bin, "site-1", "site-1", f.workerConfig(sb.client, python), c.Partition, fedPrepare{launcher: "flare-slurm", poll: 1})
	f.startServerThenClient(ctx, "server", "site-1")
	return f
}

// startServerThenClient starts the server's parent, waits until it says it
// has started, then starts the client's and waits until the client has
// registered. Started together, the client's login could reach the server
// before it had deployed, and NVFlare's client gives up on the first
// refused login ("Login failed."; seen once on Slurm 26.05 in a clean-clone
// CI run): a site starts its server first.
func (f *federation) startServerThenClient(ctx context.Context, server, client string) {
	f.t.Helper()
	f.startParent(ctx, f.server, server)
	f.waitLog(path.Join(f.base, "parent-"+server+".out"), "Server started", 3*time.Minute)
	f.startParent(ctx, f.client, client)
	f.waitLog(path.Join(f.base, "parent-"+client+".out"), "Successfully registered client:site-1", 3*time.Minute)
}

// provisionFederation provisions NVFlare's dummy project with the login
// side's name as the server (every node resolves it), a free port and one
// client, site-1; the server may run maxJobs jobs at once. It copies in the
// flare-slurm binary, the workers' interpreter (the root's python3 with
// NVFlare on its path, what a site's virtualenv would be) and the test's
// scripts, and lays out the job sources; nothing is prepared or started.
func provisionFederation(t *testing.T, c *slurmtest.Cluster, ctx context.Context, maxJobs int) *federation {
	nvRoot := c.NVFlareRoot(t)
	f := &federation{t: t, c: c, base: c.TempDir(t)}
	t.Cleanup(f.stop)
	t.Cleanup(func() {
		if t.Failed() {
			f.dumpLogs()
		}
	})
	f.bin = path.Join(f.base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), f.bin)
	python := path.Join(f.base, "python")
	c.WriteFile(t, python, []byte("#!/bin/sh\nexport PYTHONPATH="+nvRoot+"${PYTHONPATH:+:$PYTHONPATH}\nexec /usr/bin/python3 \"$@\"\n"), 0o700)
	for _, name := range []string{"mkjob.py", "admin.py", "slow.py", "crash.py", "fail101.py", "bench_admin.py", "bench_client.py"} {
		c.CopyIn(t, filepath.Join("testdata", "federation", name), path.Join(f.base, name))
	}

	project, err := os.ReadFile(c.HostPath(path.Join(nvRoot, "nvflare", "lighter", "dummy_project.yml")))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ old, new string }{
		{"name: server1", "name: " + c.LoginHost},
		{"fed_learn_port: 8002", "fed_learn_port: " + strconv.Itoa(freeTCPPort(t))},
		{"  - name: site-2\n    type: client\n    org: nvidia\n", ""},
	} {
		if !bytes.Contains(project, []byte(r.old)) {
			t.Fatalf("dummy_project.yml lacks %q", r.old)
		}
		project = bytes.Replace(project, []byte(r.old), []byte(r.new), 1)
	}
	c.WriteFile(t, path.Join(f.base, "project.yml"), project, 0o600)
	prov := c.PythonCommand(ctx, t, "-m", "nvflare.lighter.provision", "-p", "project.yml", "-w", "prov")
	prov.Dir = f.base
	if out, err := prov.CombinedOutput(); err != nil {
		t.Fatalf("provision: %v\n%s", err, out)
	}
	f.kits = path.Join(f.base, "prov", "example_project", "prod_00")
	f.admin = path.Join(f.kits, "admin@nvidia.com")
	if maxJobs != defaultMaxJobs {
		f.setMaxJobs(maxJobs)
	}

	f.jobsSrc = path.Join(f.base, "jobsrc")
	c.Mkdir(t, f.jobsSrc, 0o700)
	c.CopyIn(t, c.HostPath(path.Join(nvRoot, "examples", "hello-world", "hello-numpy", "client.py")), path.Join(f.jobsSrc, "client.py"))
	for _, name := range []string{"slow.py", "fail101.py", "bench_client.py"} {
		c.CopyIn(t, c.HostPath(path.Join(f.base, name)), path.Join(f.jobsSrc, name))
	}
	return f
}

// defaultMaxJobs is the job scheduler's max_jobs in the server kit NVFlare
// provisions (its master template).
const defaultMaxJobs = 4

// setMaxJobs sets the server kit's job scheduler max_jobs (how many jobs
// the server runs at once).
func (f *federation) setMaxJobs(n int) {
	t := f.t
	p := path.Join(f.kits, f.c.LoginHost, "local", "resources.json.default")
	var res map[string]any
	if err := json.Unmarshal([]byte(readRoot(t, f.c, p)), &res); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	found := false
	for _, comp := range res["components"].([]any) {
		m := comp.(map[string]any)
		if m["id"] == "job_scheduler" {
			m["args"].(map[string]any)["max_jobs"] = n
			found = true
		}
	}
	if !found {
		t.Fatalf("%s has no job_scheduler component", p)
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	f.c.WriteFile(t, p, data, 0o600)
}

// workerConfig is the slurm.yaml lines that say how a site's workers run.
func (f *federation) workerConfig(sandbox, python string) string {
	if sandbox == "none" {
		return "sandbox: none\n  python_path: " + python
	}
	image := f.c.RequireContainers(f.t, sandbox)
	return "sandbox: " + sandbox + "\n  image: " + image + "\n  python_path: /usr/bin/python3"
}

// fedPrepare is how a site's kit is prepared: which launcher the parent
// runs ("flare-slurm", or "nvflare" for NVFlare's own, prepare's default),
// the poll interval (seconds) and the workspace's directory name (default
// ws-NAME).
type fedPrepare struct {
	launcher string
	poll     int
	wsName   string
}

// prepare writes the site's slurm.yaml and prepares its kit; it returns the
// workspace.
func (f *federation) prepare(ctx context.Context, bin, kit, name, workers, partition string, o fedPrepare) string {
	t := f.t
	wsName := o.wsName
	if wsName == "" {
		wsName = "ws-" + name
	}
	cfg := path.Join(f.base, wsName+"-slurm.yaml")
	f.c.WriteFile(t, cfg, []byte(fmt.Sprintf(`runtime: slurm
job_launcher:
  %s
  internal_port: %d
  parent_host: %s
  poll_interval: %d
  sbatch_directives:
    partition: %s
`, workers, freeTCPPort(t), f.c.LoginHost, o.poll, partition)), 0o600)
	ws := path.Join(f.base, wsName)
	out, err := f.c.Command(ctx, bin, "prepare", path.Join(f.kits, kit), "--config", cfg, "--output", ws,
		"--launcher", o.launcher, "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("prepare %s: %v\n%s", name, err, out)
	}
	return ws
}

// startParent starts the parent the way the prepared workspace says
// (startup/start_slurm.sh) on the login side, as the test account.
func (f *federation) startParent(ctx context.Context, ws, name string) {
	t := f.t
	logPath := f.c.HostPath(path.Join(f.base, "parent-"+name+".out"))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := f.c.Command(ctx, "/bin/bash", "-c", "cd \"$1\" && exec ./startup/start_slurm.sh", "bash", ws)
	cmd.Env = append(f.c.PythonEnv(t), f.parentEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s parent: %v", name, err)
	}
	f.parents = append(f.parents, cmd)
	f.logFiles = append(f.logFiles, logPath)
}

// stop ends both parents (SIGTERM to their process groups, then SIGKILL).
func (f *federation) stop() {
	for _, p := range f.parents {
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
	}
	for _, p := range f.parents {
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			f.t.Errorf("parent %d ignored SIGTERM for 30 s; killed", p.Process.Pid)
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	f.parents = nil
}

func (f *federation) waitLog(rootPath, want string, limit time.Duration) {
	f.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		data, _ := os.ReadFile(f.c.HostPath(rootPath))
		if bytes.Contains(data, []byte(want)) {
			return
		}
		for _, p := range f.parents {
			if p.ProcessState != nil {
				f.t.Fatalf("a parent exited while waiting for %q", want)
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%q not in %s within %v", want, rootPath, limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dumpLogs prints the parents' output and every job's logs.
func (f *federation) dumpLogs() {
	tail := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			return err.Error()
		}
		if len(data) > 12000 {
			data = append([]byte("…\n"), data[len(data)-12000:]...)
		}
		return string(data)
	}
	for _, p := range f.logFiles {
		f.t.Logf("==== %s\n%s", p, tail(p))
	}
	printed, left := 0, 0
	for _, ws := range []string{f.server, f.client} {
		if ws == "" {
			continue
		}
		filepath.WalkDir(f.c.HostPath(ws), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (d.Name() == "log.txt" || strings.HasPrefix(d.Name(), "slurm-")) {
				if f.dumpJobs > 0 && printed >= f.dumpJobs {
					left++
					return nil
				}
				printed++
				f.t.Logf("==== %s\n%s", p, tail(p))
			}
			return nil
		})
	}
	if left > 0 {
		f.t.Logf("==== %d more job logs left out (they stay in the workspaces with FLARE_SLURM_KEEP=1)", left)
	}
}

// adminCall runs admin.py (NVFlare's admin session API) and decodes its line.
func (f *federation) adminCall(ctx context.Context, v any, args ...string) {
	f.t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := f.c.PythonCommand(cctx, f.t, append([]string{path.Join(f.base, "admin.py"), f.admin}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), v) != nil {
		f.t.Fatalf("admin %v: %v\n%s\n%s", args, err, out, stderr.String())
	}
}

// makeJob exports a job folder (hello-numpy's recipe) and returns it;
// trainArgs, when given, are the script's arguments.
func (f *federation) makeJob(ctx context.Context, name, script string, rounds int, meta map[string]any, trainArgs ...string) string {
	f.t.Helper()
	metaJSON, _ := json.Marshal(meta)
	cmd := f.c.PythonCommand(ctx, f.t, append([]string{path.Join(f.base, "mkjob.py"), path.Join(f.base, "jobs"), name, script, strconv.Itoa(rounds), string(metaJSON)}, trainArgs...)...)
	cmd.Dir = f.jobsSrc
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("exporting job %s: %v\n%s", name, err, out)
	}
	return path.Join(f.base, "jobs", name)
}

func (f *federation) submit(ctx context.Context, job string) string {
	var a struct {
		JobID string `json:"job_id"`
	}
	f.adminCall(ctx, &a, "submit", job)
	if a.JobID == "" {
		f.t.Fatalf("submit %s: no job id", job)
	}
	return a.JobID
}

// finalStatus polls NVFlare's job status until it is FINISHED:…
func (f *federation) finalStatus(ctx context.Context, jobID string, limit time.Duration) string {
	f.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var s struct {
			Status string `json:"status"`
		}
		f.adminCall(ctx, &s, "status", jobID)
		if strings.HasPrefix(s.Status, "FINISHED") {
			return s.Status
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job %s still %s after %v", jobID, s.Status, limit)
		}
		time.Sleep(2 * time.Second)
	}
}

// names are the Slurm job names flare-slurm gives the job's server and
// client workers (the server parent launches under NVFlare's identity "server").
func names(jobID string) (server, client string) {
	sum := sha256.Sum256([]byte(jobID))
	key := hex.EncodeToString(sum[:])[:8]
	return "nvfl-server-" + key, "nvfl-site-1-" + key
}

// queue lists the job's rows in squeue: name → (state, comment).
func (f *federation) queue(jobID string) map[string][2]string {
	s, c := names(jobID)
	out := f.c.Run(f.t, "squeue", "-h", "--name="+s+","+c, "--format=%j|%T|%k")
	rows := map[string][2]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if p := strings.Split(l, "|"); len(p) == 3 {
			rows[p[0]] = [2]string{p[1], p[2]}
		}
	}
	return rows
}

// accounting waits until sacct has a terminal record of every named job
// that Slurm knows, and returns name → (Slurm job id, state).
func (f *federation) accounting(jobID string, want []string, limit time.Duration) map[string][2]string {
	f.t.Helper()
	s, c := names(jobID)
	terminal := regexp.MustCompile(`^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)`)
	deadline := time.Now().Add(limit)
	for {
		out := f.c.Run(f.t, "sacct", "-X", "-n", "-P", "--starttime=now-1days", "--name="+s+","+c, "--format=JobName,JobID,State")
		rows := map[string][2]string{}
		done := true
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			p := strings.Split(l, "|")
			if len(p) != 3 {
				continue
			}
			rows[p[0]] = [2]string{p[1], p[2]}
			done = done && terminal.MatchString(p[2])
		}
		for _, n := range want {
			if _, ok := rows[n]; !ok {
				done = false
			}
		}
		if done {
			return rows
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job %s: sacct %q after %v, want terminal records of %v", jobID, out, limit, want)
		}
		time.Sleep(time.Second)
	}
}

// TestNVFlareFederation runs a real NVFlare federation on the test
// cluster with the flare-slurm runtime: a provisioned project (server and
// site-1) whose kits are prepared with --launcher flare-slurm, both parents
// started from their workspaces on the login side, jobs built on
// hello-numpy submitted through NVFlare's admin session API. Each job's
// server and client workers run as Slurm jobs with flare-slurm's names and
// comments:
//   - hello-numpy (2 rounds) finishes: both COMPLETED, FINISHED:COMPLETED;
//   - a job aborted from the admin API while running: the client's Slurm job
//     is CANCELLED, NVFlare says FINISHED:ABORTED;
//   - a job whose server worker exits 3: FAILED, FINISHED:ABNORMAL (the client
//     parent's heartbeat clean-up then cancels the client's job, a non-user
//     abort reported as 104 as NVFlare's own launcher does, and NVFlare's
//     fail_run records that infrastructure code over the server's own);
//   - a job whose client worker exits 101: FAILED, FINISHED:EXECUTION_EXCEPTION;
//   - a job whose server worker waits longer than its pending_timeout (its
//     partition is down): cancelled, FINISHED:ABNORMAL.
//
// Everything started is stopped at the end; a failure prints the parents'
// and jobs' logs. It runs twice: every worker with sandbox none, and every
// worker inside a container with the real runtimes (the server's in pyxis,
// site-1's in apptainer, NVFlare from the cluster's worker image).
func TestNVFlareFederation(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	for name, sb := range map[string]fedSandboxes{
		"none":       {"none", "none"},
		"containers": {slurmtest.SandboxPyxis, slurmtest.SandboxApptainer},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testNVFlareFederation(t, sb)
		})
	}
}

func testNVFlareFederation(t *testing.T, sb fedSandboxes) {
	c := slurmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	start := time.Now()
	f := newFederation(t, c, ctx, sb)
	t.Logf("federation up after %v", time.Since(start).Round(time.Second))
	var runs []fedRun

	// Finished.
	{
		id := f.submit(ctx, f.makeJob(ctx, "hello-numpy", "client.py", 2, nil))
		st := f.finalStatus(ctx, id, 4*time.Minute)
		s, cl := names(id)
		acct := f.accounting(id, []string{s, cl}, time.Minute)
		runs = append(runs, fedRun{"hello-numpy", id, st, acct})
		if st != "FINISHED:COMPLETED" || acct[s][1] != "COMPLETED" || acct[cl][1] != "COMPLETED" {
			t.Errorf("hello-numpy: NVFlare %s, sacct %v; want FINISHED:COMPLETED and both COMPLETED", st, acct)
		}
	}

	// Aborted from the admin API while both workers run.
	{
		id := f.submit(ctx, f.makeJob(ctx, "slow", "slow.py", 1, nil))
		s, cl := names(id)
		deadline := time.Now().Add(3 * time.Minute)
		for {
			q := f.queue(id)
			if q[s][0] == "RUNNING" && q[cl][0] == "RUNNING" {
				// nvfl:<job id>@<the workspace's id> (issue 25 item 13).
				if !strings.HasPrefix(q[s][1], "nvfl:"+id+"@") || !strings.HasPrefix(q[cl][1], "nvfl:"+id+"@") || q[s][1] == q[cl][1] {
					t.Errorf("squeue comments %v, want nvfl:%s@<workspace id>, one per workspace", q, id)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("slow: workers not both RUNNING after 3 min: %v", q)
			}
			time.Sleep(time.Second)
		}
		time.Sleep(5 * time.Second) // the client script is in its sleep
		var a map[string]string
		f.adminCall(ctx, &a, "abort", id)
		st := f.finalStatus(ctx, id, 2*time.Minute)
		acct := f.accounting(id, []string{s, cl}, 2*time.Minute)
		runs = append(runs, fedRun{"slow (aborted)", id, st, acct})
		if st != "FINISHED:ABORTED" || !strings.HasPrefix(acct[cl][1], "CANCELLED") {
			t.Errorf("abort: NVFlare %s, sacct %v; want FINISHED:ABORTED and the client's job CANCELLED", st, acct)
		}
	}

	// The server worker exits 3.
	{
		job := f.makeJob(ctx, "failsrv", "client.py", 1, nil)
		f.c.CopyIn(t, c.HostPath(path.Join(f.base, "crash.py")), path.Join(job, "app", "custom", "crash.py"))
		cfgPath := path.Join(job, "app", "config", "config_fed_server.json")
		var cfg map[string]any
		if err := json.Unmarshal([]byte(readRoot(t, c, cfgPath)), &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["components"] = append(cfg["components"].([]any), map[string]any{"id": "crash", "path": "crash.Crash", "args": map[string]any{}})
		data, _ := json.MarshalIndent(cfg, "", "  ")
		c.WriteFile(t, cfgPath, data, 0o600)
		id := f.submit(ctx, job)
		st := f.finalStatus(ctx, id, 3*time.Minute)
		s, _ := names(id)
		acct := f.accounting(id, []string{s}, 2*time.Minute)
		runs = append(runs, fedRun{"failsrv (server worker exits 3)", id, st, acct})
		// The client's job is ended by the client parent's heartbeat
		// clean-up: not a user abort, 104 (as with NVFlare's own launcher),
		// which NVFlare's fail_run records as the run's code: ABNORMAL.
		if st != "FINISHED:ABNORMAL" || acct[s][1] != "FAILED" {
			t.Errorf("failing worker: NVFlare %s, sacct %v; want FINISHED:ABNORMAL and the server's job FAILED", st, acct)
		}
	}

	// The client worker exits 101 (NVFlare's code for a job that failed
	// with an exception): the client parent reports it, the server fails the run.
	{
		id := f.submit(ctx, f.makeJob(ctx, "failcli", "fail101.py", 1, nil))
		st := f.finalStatus(ctx, id, 3*time.Minute)
		_, cl := names(id)
		acct := f.accounting(id, []string{cl}, 2*time.Minute)
		runs = append(runs, fedRun{"failcli (client worker exits 101)", id, st, acct})
		if st != "FINISHED:EXECUTION_EXCEPTION" || acct[cl][1] != "FAILED" {
			t.Errorf("failing client worker: NVFlare %s, sacct %v; want FINISHED:EXECUTION_EXCEPTION and the client's job FAILED", st, acct)
		}
	}

	// The server worker waits longer than the job's pending_timeout.
	{
		job := f.makeJob(ctx, "held", "client.py", 1, map[string]any{
			"launcher_spec": map[string]any{"server": map[string]any{"slurm": map[string]any{"pending_timeout": 10}}},
		})
		if out, err := c.RootCommand(ctx, "scontrol", "update", "PartitionName="+f.hold, "State=DOWN").CombinedOutput(); err != nil {
			t.Fatalf("scontrol update State=DOWN: %v\n%s", err, out)
		}
		up := func() {
			c.RootCommand(context.Background(), "scontrol", "update", "PartitionName="+f.hold, "State=UP").Run()
		}
		defer up()
		id := f.submit(ctx, job)
		st := f.finalStatus(ctx, id, 3*time.Minute)
		up()
		s, _ := names(id)
		acct := f.accounting(id, []string{s}, 2*time.Minute)
		runs = append(runs, fedRun{"held (pending_timeout 10 s)", id, st, acct})
		if st != "FINISHED:ABNORMAL" || !strings.HasPrefix(acct[s][1], "CANCELLED") {
			t.Errorf("pending timeout: NVFlare %s, sacct %v; want FINISHED:ABNORMAL and the server's job CANCELLED", st, acct)
		}
	}

	for _, r := range runs {
		var slurm []string
		for name, v := range r.slurm {
			slurm = append(slurm, fmt.Sprintf("%s=Slurm job %s %s", name, v[0], v[1]))
		}
		t.Logf("%s: NVFlare job %s %s; %s", r.name, r.jobID, r.status, strings.Join(slurm, ", "))
	}

	// Nothing of the federation is left in the queue.
	for _, r := range runs {
		if q := f.queue(r.jobID); len(q) > 0 {
			t.Errorf("job %s still queued: %v", r.jobID, q)
		}
	}
	f.stop()
	// Every launch went through the parent's wait --follow (the bridge
	// logs each launch it runs as a process instead, and why).
	for _, ws := range []string{f.server, f.client} {
		if log := readRoot(t, c, path.Join(ws, "log.txt")); strings.Contains(log, "launching it with a flare-slurm launch process") {
			t.Errorf("%s/log.txt: a launch ran as a process, not through the parent's wait --follow:\n%s", ws, log)
		}
	}
	t.Logf("federation run: %v", time.Since(start).Round(time.Second))
}

func readRoot(t *testing.T, c *slurmtest.Cluster, p string) string {
	t.Helper()
	data, err := os.ReadFile(c.HostPath(p))
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s does not exist", p)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
