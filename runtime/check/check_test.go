package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/runtime/site"
	"github.com/flare-slurm/flare-slurm/schema"
)

func TestSelect(t *testing.T) {
	all := Names()
	if len(all) < 10 || all[0] != "bootstrap" {
		t.Fatalf("Names() = %v", all)
	}
	got, err := Select(nil, nil)
	if err != nil || !slices.Equal(got, all) {
		t.Errorf("Select() = %v, %v", got, err)
	}
	got, err = Select([]string{"secrets", "success"}, nil)
	if err != nil || !slices.Equal(got, []string{"success", "secrets"}) {
		t.Errorf("--only keeps report order: %v, %v", got, err)
	}
	got, err = Select(nil, []string{"timeout"})
	if err != nil || slices.Contains(got, "timeout") || len(got) != len(all)-1 {
		t.Errorf("--skip timeout: %v, %v", got, err)
	}
	if _, err := Select([]string{"sucess"}, nil); err == nil || !strings.Contains(err.Error(), `unknown probe "sucess"`) || !strings.Contains(err.Error(), "success") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Select([]string{"success"}, []string{"success"}); err == nil {
		t.Error("--only X --skip X must leave nothing and say so")
	}
	for _, p := range probes {
		if p.about == "" || !strings.HasPrefix(jobPrefix+p.name, "check-") {
			t.Errorf("probe %s has no description", p.name)
		}
	}
}

func done(state string, rc int) manager.Status {
	return manager.Status{SlurmJobID: "42", State: state, Terminal: true, ReturnCode: rc}
}

func seenOn(job string) *observed {
	f := false
	return &observed{Host: "node1", UID: 1500, Python: "3.13", SlurmJobID: job, SecretFilePresent: &f,
		Env: map[string]string{compile.ChildProcessEnv: "1"}, SecretSHA256: map[string]*string{}}
}

// TestExpectEnd pins the judge of the result probes: the state and the
// return code must both match, the worker must have run (or, for a pending
// job, must not have), and the evidence says what was seen either way.
func TestExpectEnd(t *testing.T) {
	judge := expectEnd("TIMEOUT", 104, true)
	pending := expectEnd("CANCELLED", 9, false)
	for _, c := range []struct {
		name   string
		judge  func(*outcome) (string, string)
		o      outcome
		result string
		want   string
	}{
		{"pass", judge, outcome{status: done("TIMEOUT", 104), seen: seenOn("42")}, pass, "ended TIMEOUT with return code 104; worker ran on node1"},
		{"wrong state", judge, outcome{status: done("COMPLETED", 0), seen: seenOn("42")}, fail, "ended COMPLETED with return code 0; want TIMEOUT with return code 104"},
		{"wrong code", judge, outcome{status: done("TIMEOUT", 1), seen: seenOn("42")}, fail, "want TIMEOUT with return code 104"},
		{"not ended", judge, outcome{status: manager.Status{State: "RUNNING"}, waitErr: errors.New("context deadline exceeded")}, fail, "not ended: last state RUNNING (context deadline exceeded)"},
		{"worker never ran", judge, outcome{status: done("TIMEOUT", 104), seenErr: errors.New("no observed.json")}, fail, "no observed.json"},
		{"another job's observation", judge, outcome{status: done("TIMEOUT", 104), seen: seenOn("41")}, fail, `names Slurm job "41", not 42`},
		{"cancel failed", pending, outcome{status: done("CANCELLED", 9), actErr: errors.New("cancel: boom")}, fail, "cancel: boom"},
		{"pending pass", pending, outcome{status: done("CANCELLED", 9), stateSeen: "PENDING"}, pass, "seen PENDING, then ended CANCELLED with return code 9; the worker never started"},
		{"pending but started", pending, outcome{status: done("CANCELLED", 9), seen: seenOn("42")}, fail, "but the worker started on node1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, ev := c.judge(&c.o)
			if r != c.result || !strings.Contains(ev, c.want) {
				t.Errorf("got %s %q, want %s containing %q", r, ev, c.result, c.want)
			}
		})
	}
}

func TestJudgeSecrets(t *testing.T) {
	tok := "check-token-abc"
	h := sha(tok)
	good := func() *outcome {
		s := seenOn("42")
		s.SecretSHA256["NVFLARE_JOB_AUTH_TOKEN"] = &h
		return &outcome{status: done("COMPLETED", 0), seen: s, token: tok,
			launched: &site.Probe{Artifacts: &compile.Artifacts{BatchScript: []byte("#!/bin/bash\nsource secret.env\n"), Argv: []string{"sbatch", "x"}}, SchedulerEnv: []string{"A=b"}}}
	}
	if r, ev := worked(judgeSecrets)(good()); r != pass || !strings.Contains(ev, "NVFLARE_JOB_AUTH_TOKEN arrived") || !strings.Contains(ev, "secret.env was gone before the worker started") {
		t.Errorf("good: %s %s", r, ev)
	}
	// Inside a container the worker cannot see its job dir: the row does
	// not claim secret.env's removal (a review found it "passed" on a path
	// that never exists there).
	hidden, invisible := good(), false
	hidden.seen.SecretDirVisible, hidden.seen.SecretFilePresent = &invisible, nil
	if r, ev := worked(judgeSecrets)(hidden); r != pass || strings.Contains(ev, "was gone") || !strings.Contains(ev, "not visible to the worker") {
		t.Errorf("container: %s %s", r, ev)
	}
	other := sha("other")
	present := true
	for _, c := range []struct {
		name string
		mut  func(o *outcome)
		want string
	}{
		{"missing", func(o *outcome) { o.seen.SecretSHA256 = map[string]*string{} }, "NVFLARE_JOB_AUTH_TOKEN did not reach the worker"},
		{"other value", func(o *outcome) { o.seen.SecretSHA256["NVFLARE_JOB_AUTH_TOKEN"] = &other }, "with another value"},
		{"file kept", func(o *outcome) { o.seen.SecretFilePresent = &present }, "secret.env still existed"},
		{"not reported", func(o *outcome) { o.seen.SecretFilePresent = nil }, "did not report whether secret.env"},
		{"in batch.sh", func(o *outcome) { o.launched.Artifacts.BatchScript = []byte("export T=" + tok) }, "is in batch.sh"},
		{"in argv", func(o *outcome) { o.launched.Artifacts.Argv = []string{"sbatch", "--comment=" + tok} }, "is in the sbatch argv"},
		{"in scheduler env", func(o *outcome) { o.launched.SchedulerEnv = []string{"X=" + tok} }, "the scheduler's environment"},
		{"in output", func(o *outcome) { o.output = "+ export NVFLARE_JOB_AUTH_TOKEN=" + tok }, "is in the job's output file"},
		{"job failed", func(o *outcome) { o.status = done("FAILED", 1) }, "ended FAILED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := good()
			c.mut(o)
			if r, ev := worked(judgeSecrets)(o); r != fail || !strings.Contains(ev, c.want) {
				t.Errorf("got %s %q, want fail with %q", r, ev, c.want)
			}
		})
	}
}

func TestJudgeEnvironment(t *testing.T) {
	o := &outcome{status: done("COMPLETED", 0), seen: seenOn("42")}
	o.seen.EnvNames = []string{"HOME", compile.ChildProcessEnv}
	if r, ev := worked(judgeEnvironment)(o); r != pass {
		t.Errorf("good: %s %s", r, ev)
	}
	o.view = &compile.PlanView{Env: []compile.EnvVar{{Name: "MODE", Value: "a b"}}, ForwardEnv: []string{"HTTP_PROXY", "FWD"}}
	o.seen.EnvNames = append(o.seen.EnvNames, "FWD")
	o.seen.Env["MODE"] = "a b"
	if r, ev := worked(judgeEnvironment)(o); r != pass || !strings.Contains(ev, "1 study env values exact; forward_env arrived: FWD; not set after setup: HTTP_PROXY") {
		t.Errorf("study env and forward_env: %s %s", r, ev)
	}
	o.seen.Env["MODE"] = "a  b"
	if r, ev := worked(judgeEnvironment)(o); r != fail || !strings.Contains(ev, `study env MODE is "a  b" (set: true), want "a b"`) {
		t.Errorf("study env changed: %s %s", r, ev)
	}
	o.seen.Env["MODE"] = "a b"
	o.seen.EnvNames = append(o.seen.EnvNames, submitSideEnv)
	if r, ev := worked(judgeEnvironment)(o); r != fail || !strings.Contains(ev, "--export=NIL does not hold") {
		t.Errorf("submit-side variable: %s %s", r, ev)
	}
	o = &outcome{status: done("COMPLETED", 0), seen: seenOn("42")}
	o.seen.Env = map[string]string{}
	if r, ev := worked(judgeEnvironment)(o); r != fail || !strings.Contains(ev, compile.ChildProcessEnv+` is ""`) {
		t.Errorf("no child marker: %s %s", r, ev)
	}
}

func TestJudgeConnectivity(t *testing.T) {
	o := &outcome{status: done("COMPLETED", 0), seen: seenOn("42")}
	if r, _ := worked(judgeConnectivity)(o); r != fail {
		t.Error("no connect attempt must fail")
	}
	o.seen.Connect = &connectSeen{URL: "tcp://h:1", Host: "h", Port: 1, Error: "ConnectionRefusedError: refused"}
	if r, ev := worked(judgeConnectivity)(o); r != fail || !strings.Contains(ev, "could not reach the parent at h:1") || !strings.Contains(ev, "refused") {
		t.Errorf("refused: %s %s", r, ev)
	}
	o.seen.Connect = &connectSeen{Host: "h", Port: 1, OK: true}
	if r, ev := worked(judgeConnectivity)(o); r != pass || !strings.Contains(ev, "held by another program") {
		t.Errorf("port held by the parent: %s %s", r, ev)
	}
	l, err := listen(0)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	defer l.close()
	o.listen = l
	if r, ev := worked(judgeConnectivity)(o); r != fail || !strings.Contains(ev, "did not answer") {
		t.Errorf("connected elsewhere: %s %s", r, ev)
	}
}

// TestProbeProgram runs the embedded probe program with python3 as batch.sh
// would (python -u script <worker args>) against check's listener: it
// writes observed.json (secrets only as SHA-256), reaches the listener
// named by -p and exits with the code probe.json asks for.
func TestProbeProgram(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the probe program: %v", err)
	}
	dir := t.TempDir()
	l, err := listen(0)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	defer l.close()
	port := l.ln.Addr().String()[strings.LastIndexByte(l.ln.Addr().String(), ':')+1:]
	sp := spec{Probe: "x", Exit: 103, ReportEnv: []string{"SHOWN"}, SecretNames: []string{"SECRET", "UNSET"}, Resources: true,
		Paths:      []string{dir, "/proc/self", "/nonexistent-check"},
		SecretFile: filepath.Join(dir, "secret.env"), Connect: true, ConnectTimeout: 5, Nonce: l.nonce}
	data, _ := json.Marshal(sp)
	for name, b := range map[string][]byte{programFile: program, specFile: data} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(py, "-u", filepath.Join(dir, programFile), "-m", "/ws", "-p", "tcp://127.0.0.1:"+port, "-n", "job")
	cmd.Dir = dir
	cmd.Env = []string{"SHOWN=v1", "SECRET=s3cret", "SLURM_JOB_ID=7", "PATH=/usr/bin:/bin"}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 103 {
		t.Fatalf("exit %v, want 103; stderr %s", err, errb.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, observedFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("s3cret")) {
		t.Error("observed.json holds a secret value")
	}
	var o observed
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	if o.SlurmJobID != "7" || o.Env["SHOWN"] != "v1" || o.SecretFilePresent == nil || *o.SecretFilePresent ||
		o.SecretSHA256["SECRET"] == nil || *o.SecretSHA256["SECRET"] != sha("s3cret") || o.SecretSHA256["UNSET"] != nil {
		t.Errorf("observed %+v", o)
	}
	if p := o.Paths; !p[dir].Dir || !p[dir].Writable || !p["/proc/self"].Exists || p["/nonexistent-check"].Exists {
		t.Errorf("paths %+v", p)
	}
	if o.MemLimitSource == "" || o.CPUs < 1 {
		t.Errorf("resources: cpus %d, memory limit %v from %q", o.CPUs, o.MemLimitBytes, o.MemLimitSource)
	}
	if o.Connect == nil || !o.Connect.OK || o.Connect.Answer != "ok" || l.reached() == "" {
		t.Errorf("connect %+v, listener reached by %q", o.Connect, l.reached())
	}
}

func TestRequest(t *testing.T) {
	ws := &schema.Workspace{Root: "/ws", Role: "client", Site: "site-1", ConnectionSecurity: "mtls"}
	ws.Launcher.InternalPort = 8102
	data, err := request(ws, "check-x-1", "", map[string]any{"time": "00:01:00"}, "tok")
	if err != nil {
		t.Fatal(err)
	}
	req, ps := schema.ParseLaunchRequest("check", data, "")
	if ps != nil {
		t.Fatal(req.Place(ps))
	}
	if req.JobID != "check-x-1" || req.Role != "client" || req.JobArgs["parent_url"][1] != "stcp://localhost:8102" ||
		req.JobArgs["auth_token"][1] != "tok" || req.JobArgs["client_name"][1] != "site-1" {
		t.Errorf("request %+v", req)
	}
	if !strings.Contains(string(req.Meta), `"site-1":{"slurm":{"time":"00:01:00"}}`) {
		t.Errorf("meta %s", req.Meta)
	}
	ws.Role, ws.ConnectionSecurity = "server", "clear"
	data, _ = request(ws, "check-x-1", "pathology", nil, "tok")
	req, ps = schema.ParseLaunchRequest("check", data, "")
	if ps != nil || req.JobArgs["parent_url"][1] != "tcp://localhost:8102" || req.JobArgs["app_root"][1] != "/ws/check-x-1/app_server" || !strings.Contains(string(req.Meta), `"study":"pathology"`) {
		t.Errorf("server request %+v %v", req, ps)
	}
}

// TestRunDir: check creates the run dir exclusively, and removes only what
// it knows; a file it did not create keeps the dir.
func TestRunDir(t *testing.T) {
	root := t.TempDir()
	run, err := makeRunDir(root, "check-a-1")
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	if _, err := makeRunDir(root, "check-a-1"); err == nil {
		t.Error("an existing run dir must be refused")
	}
	for _, n := range []string{specFile, observedFile, "slurm-12.out"} {
		os.WriteFile(filepath.Join(root, "check-a-1", n), nil, 0o600)
	}
	if err := removeRunDir(root, "check-a-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "check-a-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run dir left: %v", err)
	}
	if run, err := makeRunDir(root, "check-b-1"); err == nil {
		run.Close()
	}
	os.WriteFile(filepath.Join(root, "check-b-1", "foreign"), nil, 0o600)
	if err := removeRunDir(root, "check-b-1"); err == nil || !strings.Contains(err.Error(), "holds foreign, which check did not create") {
		t.Errorf("foreign file: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "check-b-1", "foreign")); err != nil {
		t.Errorf("the foreign file was removed: %v", err)
	}
	if err := removeRunDir(root, "check-none"); err != nil {
		t.Errorf("a missing run dir: %v", err)
	}
}

func TestReport(t *testing.T) {
	rows := []Row{
		{Name: "success", Result: pass, Seconds: 1.25, SlurmJobID: "7", Evidence: "Slurm job 7: ok"},
		{Name: "failure", Result: fail, Seconds: 2, SlurmJobID: "8", Evidence: "Slurm job 8: ended COMPLETED"},
		{Name: "connectivity", Result: skip, Evidence: "shared-file"},
		{Name: "resources", Result: warn, Evidence: "memory not enforced"},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows, 3.5); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "PROBE") || !strings.Contains(lines[2], "failure") || !strings.Contains(lines[3], " - ") {
		t.Errorf("table:\n%s", b.String())
	}
	if lines[5] != "check FAILED: 1 pass, 1 fail, 1 warn, 1 skip in 3.5 s" {
		t.Errorf("summary line %q", lines[5])
	}
	if got := SummaryLine(rows[:1], 1); got != "check passed: 1 pass, 0 fail, 0 warn, 0 skip in 1.0 s" {
		t.Errorf("summary %q", got)
	}
	cases := JUnitCases(rows)
	if cases[0].Failure != "" || cases[1].Failure == "" || cases[2].Skipped != "shared-file" || cases[3].Failure != "" {
		t.Errorf("junit cases %+v", cases)
	}
}

func i64(v int64) *int64 { return &v }

// TestJudgeResources: 1 CPU and a 256 MiB limit pass; more CPUs or no
// memory limit is a warning (not enforced), fewer CPUs or a smaller limit
// a failure.
func TestJudgeResources(t *testing.T) {
	for _, c := range []struct {
		cpus   int
		lim    *int64
		result string
		want   string
	}{
		{1, i64(256 << 20), pass, "memory limit 256 MiB as asked"},
		{2, i64(256 << 20), warn, "CPUs not confined: 2 visible"},
		{1, nil, warn, "memory not enforced"},
		{1, i64(512 << 20), warn, "memory limit 512 MiB, more than"},
		{0, i64(256 << 20), fail, "fewer than the 1 asked for"},
		{2, i64(128 << 20), fail, "less than the 256 MiB"},
	} {
		o := &outcome{status: done("COMPLETED", 0), seen: seenOn("42")}
		o.seen.CPUs, o.seen.MemLimitBytes = c.cpus, c.lim
		if r, ev := worked(judgeResources)(o); r != c.result || !strings.Contains(ev, c.want) {
			t.Errorf("cpus %d limit %v: %s %s, want %s with %q", c.cpus, c.lim, r, ev, c.result, c.want)
		}
	}
}

func TestJudgeGPUs(t *testing.T) {
	o := &outcome{status: done("COMPLETED", 0), seen: seenOn("42"), opts: Options{GPUs: 2}}
	o.seen.Env["CUDA_VISIBLE_DEVICES"] = "0,1"
	if r, ev := worked(judgeGPUs)(o); r != pass || !strings.Contains(ev, "nvidia-smi not on the worker's PATH") {
		t.Errorf("2 of 2: %s %s", r, ev)
	}
	o.seen.NvidiaSMI = []string{"GPU 0: A100"}
	if r, _ := worked(judgeGPUs)(o); r != fail {
		t.Error("nvidia-smi listing fewer GPUs must fail")
	}
	o.seen.NvidiaSMI = nil
	o.seen.Env["CUDA_VISIBLE_DEVICES"] = "0"
	if r, _ := worked(judgeGPUs)(o); r != fail {
		t.Error("1 of 2 must fail")
	}
	if row := skipped("gpus", Options{}); row.Result != skip || row.Evidence == "" {
		t.Error("without --gpus the probe is skipped with a reason")
	}
}

func TestJudgeRestart(t *testing.T) {
	good := func() *outcome {
		return &outcome{status: done("FAILED", 103), released: true, child: &childWait{Status: done("FAILED", 103), Exit: 103}}
	}
	if r, ev := judgeRestart(good()); r != pass || !strings.Contains(ev, "re-attached through the persisted handle") || !strings.Contains(ev, "the launching process let go") {
		t.Errorf("good: %s %s", r, ev)
	}
	for name, mut := range map[string]func(o *outcome){
		"no child":       func(o *outcome) { o.child = nil },
		"not released":   func(o *outcome) { o.released = false },
		"child failed":   func(o *outcome) { o.child.Err = errors.New("no such job") },
		"child's code":   func(o *outcome) { o.child.Status.ReturnCode = 1 },
		"child's exit":   func(o *outcome) { o.child.Exit = 0 },
		"another job":    func(o *outcome) { o.child.Status.SlurmJobID = "41" },
		"child not done": func(o *outcome) { o.child.Status.Terminal = false },
		"job's end":      func(o *outcome) { o.status = done("COMPLETED", 0) },
	} {
		o := good()
		mut(o)
		if r, ev := judgeRestart(o); r != fail {
			t.Errorf("%s: %s %s", name, r, ev)
		}
	}
}

func TestJudgeAccounting(t *testing.T) {
	o := &outcome{status: done("COMPLETED", 0), placement: scheduler.Placement{Account: "flare", Partition: "debug", QOS: "normal", State: "COMPLETED", Nodes: "n1"}}
	if r, ev := judgeAccounting(o); r != pass || !strings.Contains(ev, "partition, account, qos not set by the site or study") {
		t.Errorf("no directives: %s %s", r, ev)
	}
	o.placement.State = "FAILED"
	if r, ev := judgeAccounting(o); r != fail || !strings.Contains(ev, "state FAILED, but the runtime reported COMPLETED") {
		t.Errorf("state mismatch: %s %s", r, ev)
	}
	o.placement.State = "COMPLETED"
	o.placementErr = errors.New("sacct has no record of Slurm job 42")
	if r, ev := judgeAccounting(o); r != fail || !strings.Contains(ev, "no record") {
		t.Errorf("no record: %s %s", r, ev)
	}
}

// TestJudgeFilesystem: the workspace visible and the run dir the writable
// working directory pass; a container that leaves startup/ writable, or a
// mount whose mode differs from the study's, fails.
func TestJudgeFilesystem(t *testing.T) {
	good := func(sandbox string) *outcome {
		o := &outcome{status: done("COMPLETED", 0), seen: seenOn("42"), view: &compile.PlanView{
			Workspace: "/ws", RunDir: "/ws/check-x", Sandbox: sandbox,
			Mounts: []compile.Mount{{Source: "/data", Destination: "/data", Mode: "ro"}, {Source: "/scratch", Destination: "/scratch", Mode: "rw"}}}}
		o.seen.Cwd = "/ws/check-x"
		o.seen.Paths = map[string]pathSeen{
			"/ws": {Exists: true, Dir: true}, "/ws/check-x": {Exists: true, Dir: true, Writable: true},
			"/ws/startup": {Exists: true, Dir: true}, "/ws/local": {Exists: true, Dir: true},
			"/data": {Exists: true, Dir: true}, "/scratch": {Exists: true, Dir: true, Writable: true},
		}
		return o
	}
	if r, ev := worked(judgeFilesystem)(good("apptainer")); r != pass || !strings.Contains(ev, "2 mounts as configured") {
		t.Errorf("good: %s %s", r, ev)
	}
	o := good("none")
	o.seen.Paths["/ws/startup"] = pathSeen{Exists: true, Dir: true, Writable: true}
	if r, ev := worked(judgeFilesystem)(o); r != pass || !strings.Contains(ev, "startup/ writable (sandbox none") {
		t.Errorf("none, writable startup: %s %s", r, ev)
	}
	for name, c := range map[string]struct {
		mut  func(o *outcome)
		want string
	}{
		"startup writable":  {func(o *outcome) { o.seen.Paths["/ws/startup"] = pathSeen{Exists: true, Dir: true, Writable: true} }, "startup/ is writable inside the container"},
		"ro mount writable": {func(o *outcome) { o.seen.Paths["/data"] = pathSeen{Exists: true, Writable: true} }, "mount /data is writable, want read-only"},
		"rw mount ro":       {func(o *outcome) { o.seen.Paths["/scratch"] = pathSeen{Exists: true} }, "mount /scratch is read-only"},
		"mount missing":     {func(o *outcome) { delete(o.seen.Paths, "/data") }, "mount /data is missing"},
		"other cwd":         {func(o *outcome) { o.seen.Cwd = "/tmp" }, "working directory is /tmp"},
		"no workspace":      {func(o *outcome) { delete(o.seen.Paths, "/ws") }, "workspace /ws is not a directory"},
		"run dir ro":        {func(o *outcome) { o.seen.Paths["/ws/check-x"] = pathSeen{Exists: true, Dir: true} }, "run dir is not writable"},
	} {
		o := good("apptainer")
		c.mut(o)
		if r, ev := worked(judgeFilesystem)(o); r != fail || !strings.Contains(ev, c.want) {
			t.Errorf("%s: %s %s, want fail with %q", name, r, ev, c.want)
		}
	}
}

func TestJudgeBootstrap(t *testing.T) {
	rt := &site.Runtime{Client: &scheduler.Client{Paths: scheduler.Paths{Sbatch: "/usr/bin/sbatch"}}}
	if r, _ := judgeBootstrap(rt, nil); r != fail {
		t.Error("a workspace opened without the bootstrap checks must not pass")
	}
	if r, ev := judgeBootstrap(rt, errors.New("slurm accounting (slurmdbd) is required")); r != fail || !strings.Contains(ev, "slurmdbd") {
		t.Errorf("failed checks: %s %s", r, ev)
	}
	rt.Version = scheduler.Version{Major: 24, Minor: 11, Patch: 5}
	if r, ev := judgeBootstrap(rt, nil); r != pass || !strings.Contains(ev, "slurm 24.11.5; accounting answers; sbatch /usr/bin/sbatch") {
		t.Errorf("%s %s", r, ev)
	}
}

func TestJudgeMultiNode(t *testing.T) {
	zero, one := 0, 1
	peers := func(exit *int, hosts ...string) *peersSeen {
		p := &peersSeen{First: "n1", Port: 5000, SrunExit: exit}
		for _, h := range hosts {
			p.Reached = append(p.Reached, struct {
				Host  string `json:"host"`
				Addr  string `json:"addr"`
				Error string `json:"error"`
			}{Host: h, Addr: "10.0.0.1"})
		}
		return p
	}
	for _, c := range []struct {
		p      *peersSeen
		result string
		want   string
	}{
		{peers(&zero, "n2", "n1"), pass, "2 of 2 nodes (n1, n2) reached the first node n1:5000; srun exit 0"},
		{peers(&zero, "n1", "n1"), fail, "1 of 2 nodes (n1)"},
		{peers(&one, "n1", "n2"), fail, "srun exit 1"},
		{peers(nil, "n1"), fail, "srun exit ?"},
		{peers(&zero, "n1", ""), fail, "sent no host name"},
		{nil, fail, "did not start the multi-node test"},
	} {
		o := &outcome{status: done("COMPLETED", 0), seen: seenOn("42"), opts: Options{Nodes: 2}}
		o.seen.Peers = c.p
		if r, ev := worked(judgeMultiNode)(o); r != c.result || !strings.Contains(ev, c.want) {
			t.Errorf("%+v: %s %s, want %s with %q", c.p, r, ev, c.result, c.want)
		}
	}
	if skipped("multi-node", Options{Nodes: 1}).Result != skip || probeNamed("multi-node").skipIf(nil, Options{Nodes: 2}) {
		t.Error("multi-node runs only with --nodes 2 or more")
	}
}

// TestRanInContainer: an observation without SLURM_JOB_ID (a container's
// clean environment) is the job's; one naming another job is not.
func TestRanInContainer(t *testing.T) {
	if ok, ev := ran(&outcome{status: done("COMPLETED", 0), seen: seenOn("")}); !ok {
		t.Errorf("clean environment: %s", ev)
	}
	if ok, _ := ran(&outcome{status: done("COMPLETED", 0), seen: seenOn("41")}); ok {
		t.Error("another job's observation must not count")
	}
}

// TestProbeMemoryLimitWalksUp: Slurm limits the job's and the step's
// cgroups, not the task's own (which shows max): the probe takes the
// smallest limit from the process's cgroup up to the root, for cgroup v2
// and v1 (a review found it read only the leaf and warned "not enforced").
func TestProbeMemoryLimitWalksUp(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the probe program: %v", err)
	}
	root := t.TempDir()
	write := func(rel, text string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2 := "cg2/system.slice/slurmstepd.scope/job_5"
	write(v2+"/memory.max", "1073741824\n")
	write(v2+"/step_0/memory.max", "max\n")
	write(v2+"/step_0/user/task_0/memory.max", "max\n")
	v1 := "cg1/memory/slurm/uid_0/job_6"
	write(v1+"/memory.limit_in_bytes", "2147483648\n")
	write(v1+"/step_0/task_0/memory.limit_in_bytes", "9223372036854771712\n")
	write("cg3/memory.max", "max\n")
	write("cg3/a/memory.max", "max\n")
	// Run the probe's own function (parsed out of probe.py) on the fake trees.
	const run = `import ast, json, sys
tree = ast.parse(open(sys.argv[1]).read())
fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "cgroup_memory_limit"][0]
ns = {}
exec(compile(ast.Module(body=[fn], type_ignores=[]), "probe.py", "exec"), ns)
print(json.dumps(ns["cgroup_memory_limit"](sys.argv[2], sys.argv[3])))`
	prog := filepath.Join(root, programFile)
	if err := os.WriteFile(prog, program, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, root, proc string
		limit            any
		source           string
	}{
		{"v2 job cgroup", "cg2", "0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0\n", 1073741824.0, v2 + "/memory.max"},
		{"v1 job cgroup", "cg1", "7:cpu:/x\n5:memory:/slurm/uid_0/job_6/step_0/task_0\n", 2147483648.0, v1 + "/memory.limit_in_bytes"},
		{"unlimited", "cg3", "0::/a\n", nil, "unlimited: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			proc := write(c.name+".cgroup", c.proc)
			out, err := exec.Command(py, "-c", run, prog, filepath.Join(root, c.root), proc).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var got []any
			if err := json.Unmarshal(out, &got); err != nil || len(got) != 2 {
				t.Fatalf("answer %s: %v", out, err)
			}
			if got[0] != c.limit || !strings.Contains(got[1].(string), c.source) {
				t.Errorf("got %v, want %v from %s", got, c.limit, c.source)
			}
		})
	}
}

// skipped is the row of probe name when its skipIf applies under o (no job
// is launched for a skipped probe).
func skipped(name string, o Options) Row {
	r := &runner{o: o, progress: io.Discard}
	return r.run(context.Background(), probeNamed(name))
}

func probeNamed(name string) *probe {
	return &probes[slices.IndexFunc(probes, func(p probe) bool { return p.name == name })]
}
