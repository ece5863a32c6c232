package compile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/schema"
)

var (
	stubOnce sync.Once
	stubPath string
	stubErr  error
)

// buildStub compiles testdata/stub once per test binary.
func buildStub(t testing.TB) string {
	t.Helper()
	stubOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flare-slurm-stub-")
		if err != nil {
			stubErr = err
			return
		}
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		stubPath = filepath.Join(dir, "stub")
		out, err := exec.Command(goTool, "build", "-o", stubPath, "./testdata/stub").CombinedOutput()
		if err != nil {
			stubErr = fmt.Errorf("build stub: %v\n%s", err, out)
		}
	})
	if stubErr != nil {
		t.Fatal(stubErr)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is required for the shell-safety tests: %v", err)
	}
	return stubPath
}

// stubRecord is what the stub writes.
type stubRecord struct {
	Argv         []string          `json:"argv"`
	Env          map[string]string `json:"env"`
	SecretExists bool              `json:"secret_exists"`
	Cwd          string            `json:"cwd"`
}

// hostilePieces are glued together into hostile values.
var hostilePieces = []string{"'", `"`, "$(touch /tmp/nvfl-pwned)", "`id`", `\`, "\n", "*", "?", "[a-z]", " ", "\t",
	"-", "--x", "-e", "é", "日本", "😀", "$HOME", "${IFS}", "$1", "!!", ";", "&&", "|", "~", "#", "%", "=", "a", "Z", "0",
	"'\"'\"'", "\\n", "<", ">", "{a,b}", "\r", "$'x'", "@"}

func hostile(rng *rand.Rand, exclude string) string {
	var b strings.Builder
	for n := rng.Intn(6); n >= 0; n-- {
		p := hostilePieces[rng.Intn(len(hostilePieces))]
		if strings.ContainsAny(p, exclude) {
			continue
		}
		b.WriteString(p)
	}
	if rng.Intn(12) == 0 {
		return ""
	}
	return b.String()
}

// hostileName is a hostile path component: never empty, no '/', and not
// "." or "..".
func hostileName(rng *rand.Rand, exclude string) string {
	s := strings.ReplaceAll(hostile(rng, exclude), "/", "_")
	if s == "" || s == "." || s == ".." {
		s += "x"
	}
	return s
}

// A run carries safetyEnvVars hostile study env values and safetyWords
// hostile option words beside its one-of-a-kind values (paths, secret,
// credentials, job args): about 40 values a bash run, so that the 10,000
// values take about 260 runs (each a bash, an rm and the stub: process
// starts are most of the test's cost).
const (
	safetyEnvVars = 12
	safetyWords   = 12
)

// studyVar is the name of the k-th hostile study env value (zero-padded:
// the names sort as they are numbered).
func studyVar(k int) string { return fmt.Sprintf("STUDY_VAR_%02d", k) }

// safetyRun is one bash run checking many hostile values at once.
type safetyRun struct {
	sandbox   string
	base      string // holds workspace, images, data
	ws        string
	jobID     string
	python    string
	tool      string // configured apptainer or srun path
	image     string
	env       map[string]string // study env
	secret    string
	creds     [3]string
	words     []string // options split
	target    string
	clientNm  string
	schemeVal string
	forwarded string
	dataset   string
	mountDest string
}

func TestShellSafetyUnderBash(t *testing.T) {
	t.Parallel()
	stub := buildStub(t)
	seed := int64(0x5eed1) // fixed: failures reproduce; change to explore
	want := 10000
	if testing.Short() {
		want = 600
	}
	t.Logf("seed %d, at least %d hostile values", seed, want)
	workers := runtime.GOMAXPROCS(0)
	var cases, runs atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(w)))
			base := t.TempDir()
			for i := 0; cases.Load() < int64(want) && !t.Failed(); i++ {
				r := newSafetyRun(t, rng, base, stub, w, i)
				n, ok := r.check(t, stub)
				if !ok {
					return
				}
				cases.Add(int64(n))
				runs.Add(1)
			}
		}(w)
	}
	wg.Wait()
	t.Logf("%d hostile values checked in %d bash runs", cases.Load(), runs.Load())
	if !t.Failed() && cases.Load() < int64(want) {
		t.Fatalf("only %d cases ran, want %d", cases.Load(), want)
	}
}

func newSafetyRun(t *testing.T, rng *rand.Rand, base, stub string, w, i int) *safetyRun {
	r := &safetyRun{sandbox: []string{"none", "apptainer", "pyxis"}[i%3], base: base}
	// One hostile workspace per worker; ':' and ',' are refused there.
	r.ws = filepath.Join(base, "ws-"+hostileName(rand.New(rand.NewSource(int64(w))), ":,\n\r"))
	r.jobID = fmt.Sprintf("job-%d-%d", w, i)
	// One-line settings of the workspace: a line break there is refused
	// when the workspace is read (schema.CheckText), so it never reaches a
	// script.
	r.python = filepath.Join(base, "bin", fmt.Sprintf("py-%d-", i)+hostileName(rng, "\n\r"))
	r.tool = filepath.Join(base, "bin", fmt.Sprintf("tool-%d-", i)+hostileName(rng, "\n\r"))
	r.image = filepath.Join(base, "images", fmt.Sprintf("img-%d-", i)+hostileName(rng, "\n\r"))
	r.env = map[string]string{}
	for k := 0; k < safetyEnvVars; k++ {
		r.env[studyVar(k)] = hostile(rng, "\r")
	}
	r.secret = hostile(rng, "")
	for k := range r.creds {
		r.creds[k] = hostile(rng, "") + "c" // empty credentials are skipped by design
	}
	for k := 0; k < safetyWords; k++ {
		r.words = append(r.words, hostile(rng, ""))
	}
	r.target, r.clientNm, r.schemeVal = hostile(rng, ""), hostile(rng, ""), hostile(rng, "")
	r.forwarded = hostile(rng, "")
	r.dataset = filepath.Join(base, "data", fmt.Sprintf("d-%d-", i)+hostileName(rng, ":,\n\r"))
	r.mountDest = "/run/secrets/" + hostileName(rng, ":,\n\r")
	return r
}

// check lays the run out, compiles it, runs batch.sh under bash and
// compares what the stub saw; it returns the number of values checked.
func (r *safetyRun) check(t *testing.T, stub string) (int, bool) {
	fail := func(format string, args ...any) (int, bool) {
		t.Errorf("sandbox %s, job %s: %s", r.sandbox, r.jobID, fmt.Sprintf(format, args...))
		return 0, false
	}
	for _, d := range []string{filepath.Join(r.ws, "startup"), filepath.Join(r.ws, "local"), filepath.Join(r.ws, r.jobID), filepath.Dir(r.python), filepath.Dir(r.image)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fail("%v", err)
		}
	}
	os.Chmod(r.ws, 0o700)
	for _, link := range []string{r.python, r.tool} {
		if err := os.Symlink(stub, link); err != nil {
			return fail("%v", err)
		}
	}
	if err := os.WriteFile(r.image, []byte("img"), 0o600); err != nil {
		return fail("%v", err)
	}
	f := &fixture{t: t, Base: r.base, Root: r.ws, Role: "client", Site: "site-1", JobID: r.jobID, Env: map[string]string{"SECRET_SOURCE": r.secret}}
	image := any(nil)
	if r.sandbox != "none" {
		image = r.image
	}
	f.Args = map[string]any{
		"sandbox": r.sandbox, "python_path": r.python, "image": image, "internal_port": 8102.0,
		"executables":       map[string]any{"apptainer": r.tool, "srun": r.tool},
		"sbatch_directives": map[string]any{"partition": "p"},
		"setup":             "export SETUP_RAN=yes\n", "forward_env": []any{"FWD_VAR"},
		"parent_host": "parent.example", "pending_timeout": 600.0, "workspace_path": r.ws,
	}
	f.Comm = map[string]any{"internal": map[string]any{"scheme": "tcp", "resources": map[string]any{"connection_security": "clear"}}}
	studyEntry := map[string]any{"env": r.env, "secret_env": map[string]any{"STUDY_SECRET": map[string]any{"source": "SECRET_SOURCE"}}}
	if r.sandbox != "none" {
		studyEntry["datasets"] = map[string]any{"ds": map[string]any{"source": r.dataset, "mode": "ro"}}
		studyEntry["secret_mounts"] = map[string]any{"sm": map[string]any{"source": r.dataset + "-secret", "mount_path": r.mountDest}}
	}
	// JSON is YAML; yaml.v3's own encoder does not round-trip a leading
	// newline in block scalars, so the test writes JSON.
	study, err := json.Marshal(map[string]any{"format_version": 2, "studies": map[string]any{"p": studyEntry}})
	if err != nil {
		return fail("%v", err)
	}
	f.Study = string(study)
	f.Request = map[string]any{"job_id": r.jobID, "site": "site-1", "role": "client", "meta": map[string]any{"study": "p"},
		"job_args": map[string]any{
			"workspace":       []any{"-m", r.ws},
			"job_id":          []any{"-n", r.jobID},
			"client_name":     []any{"-c", r.clientNm},
			"parent_url":      []any{"-p", "tcp://localhost:8102"},
			"parent_conn_sec": []any{"--parent_conn_sec", "clear"},
			"target":          []any{"-g", r.target},
			"scheme":          []any{"-scheme", r.schemeVal},
			"options":         []any{"--set", shell.Join(r.words)},
			"auth_token":      []any{"-t", r.creds[0]},
			"auth_signature":  []any{"-ts", r.creds[1]},
			"ssid":            []any{"-d", r.creds[2]},
		}}
	p, err := f.Resolve()
	if err != nil {
		return fail("resolve: %v", err)
	}
	a, err := p.Compile(f.environ())
	if err != nil {
		return fail("compile: %v", err)
	}
	if err := WriteJobDir(a, false); err != nil {
		return fail("write: %v", err)
	}
	out := filepath.Join(r.base, "out-"+r.jobID+".json")
	secretPath := filepath.Join(a.JobDir, "secret.env")
	cmd := exec.Command("bash", filepath.Join(a.JobDir, "batch.sh"))
	cmd.Dir = filepath.Join(f.Root, f.JobID) // sbatch --chdir=<run dir>
	cmd.Dir = filepath.Join(r.ws, r.jobID)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "SLURM_JOB_ID=77", "SLURM_RESTART_COUNT=0",
		"NVFL_STUB_OUT=" + out, "NVFL_STUB_SECRET=" + secretPath, "FWD_VAR=" + r.forwarded,
		"APPTAINER_BINDPATH=/inherited", "SINGULARITYENV_LEAK=1", "CUDA_VISIBLE_DEVICES=0,1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fail("bash: %v\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return fail("the stub did not run: %v\n%s", err, stderr.String())
	}
	var rec stubRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return fail("stub output: %v", err)
	}
	return r.compare(t, p, rec, secretPath)
}

func (r *safetyRun) compare(t *testing.T, p *Plan, rec stubRecord, secretPath string) (int, bool) {
	ok := true
	errorf := func(format string, args ...any) {
		ok = false
		t.Errorf("sandbox %s, job %s: %s", r.sandbox, r.jobID, fmt.Sprintf(format, args...))
	}
	runDir := filepath.Join(r.ws, r.jobID)
	worker := []string{r.python, "-u", "-m", clientModule, "-m", r.ws, "-n", r.jobID, "-c", r.clientNm,
		"-p", "tcp://parent.example:8102", "--parent_conn_sec", "clear", "-g", r.target, "-scheme", r.schemeVal, "--set"}
	worker = append(worker, r.words...)
	v := p.View()
	var wantArgv []string
	prefix := ""
	switch r.sandbox {
	case "none":
		wantArgv = worker
	case "apptainer":
		prefix = "APPTAINERENV_"
		wantArgv = apptainerExecArgv(r.tool)
		for _, m := range v.Mounts {
			wantArgv = append(wantArgv, "--bind", m.Source+":"+m.Destination+":"+m.Mode)
		}
		wantArgv = append(append(wantArgv, "--pwd", runDir, r.image), worker...)
		if rec.Env["APPTAINERENV_CUDA_VISIBLE_DEVICES"] != "0,1" {
			errorf("CUDA_VISIBLE_DEVICES not mirrored")
		}
		if _, leaked := rec.Env["APPTAINER_BINDPATH"]; leaked {
			errorf("inherited APPTAINER_BINDPATH was not unset")
		}
		if _, leaked := rec.Env["SINGULARITYENV_LEAK"]; leaked {
			errorf("inherited SINGULARITYENV_LEAK was not unset")
		}
	case "pyxis":
		names := "NVFLARE_JOB_AUTH_TOKEN,NVFLARE_JOB_SSID,NVFLARE_JOB_TOKEN_SIGNATURE,NVFLARE_SLURM_CHILD_PROCESS,PYTHONPATH,STUDY_SECRET"
		for k := 0; k < safetyEnvVars; k++ {
			names += "," + studyVar(k)
		}
		names += ",FWD_VAR"
		var mounts []string
		for _, m := range v.Mounts {
			s := m.Source + ":" + m.Destination
			if m.Mode == "ro" {
				s += ":ro"
			}
			mounts = append(mounts, s)
		}
		wantArgv = []string{r.tool, "--ntasks=1", "--export=" + names, "--container-image=" + r.image, "--container-readonly",
			"--no-container-mount-home", "--no-container-entrypoint", "--container-workdir=" + runDir,
			"--container-mounts=" + strings.Join(mounts, ","), "--container-env=" + names}
		wantArgv = append(wantArgv, worker...)
	}
	if !reflect.DeepEqual(rec.Argv, wantArgv) {
		errorf("argv differs (one argument per line):\n%s", argvDiff(rec.Argv, wantArgv))
	}
	n := len(r.words) + 5 // words, python, target, client name, scheme, workspace/run dir
	if r.sandbox != "none" {
		n += 4 // tool path, image, dataset source, mount destination
		found := 0
		for _, m := range v.Mounts {
			if (m.Source == r.dataset && m.Destination == "/data/p/ds") || (m.Source == r.dataset+"-secret" && m.Destination == r.mountDest) {
				found++
			}
		}
		if found != 2 {
			errorf("study mounts not carried exactly: %+v", v.Mounts)
		}
	}
	wantEnv := map[string]string{"STUDY_SECRET": r.secret, "NVFLARE_JOB_AUTH_TOKEN": r.creds[0],
		"NVFLARE_JOB_TOKEN_SIGNATURE": r.creds[1], "NVFLARE_JOB_SSID": r.creds[2], "FWD_VAR": r.forwarded,
		"NVFLARE_SLURM_CHILD_PROCESS": "1", "PYTHONPATH": ""}
	for k, val := range r.env {
		wantEnv[k] = val
	}
	for name, want := range wantEnv {
		got, present := rec.Env[prefix+name]
		if !present || got != want {
			errorf("env %s%s = %q (set %v), want %q", prefix, name, got, present, want)
		}
		n++
	}
	if rec.Env["SETUP_RAN"] != "yes" {
		errorf("setup did not run before the worker")
	}
	if rec.SecretExists {
		errorf("secret file still existed when the worker started")
	}
	if _, err := os.Lstat(secretPath); err == nil {
		errorf("secret file survives the run")
	}
	return n, ok
}

// runBatch compiles a fixture, writes its job dir and runs batch.sh with
// env; it returns the exit code, stderr and the stub's output path.
func runBatch(t *testing.T, f *fixture, env []string, beforeRun func(a *Artifacts)) (int, string, string) {
	t.Helper()
	stub := buildStub(t)
	f.Args["python_path"] = stub
	_, a := f.MustCompile()
	if err := WriteJobDir(a, false); err != nil {
		t.Fatal(err)
	}
	if beforeRun != nil {
		beforeRun(a)
	}
	out := filepath.Join(f.Base, "stub.json")
	cmd := exec.Command("bash", filepath.Join(a.JobDir, "batch.sh"))
	cmd.Dir = filepath.Join(f.Root, f.JobID) // sbatch --chdir=<run dir>
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "NVFL_STUB_OUT=" + out, "NVFL_STUB_SECRET=" + filepath.Join(a.JobDir, "secret.env")}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String(), out
}

func TestBatchRefusesRequeuedAllocation(t *testing.T) {
	f := newFixture(t, "none", "client")
	code, stderr, out := runBatch(t, f, []string{"SLURM_RESTART_COUNT=1"}, nil)
	if code != 101 || !strings.Contains(stderr, "requeued NVFlare job refused") {
		t.Fatalf("exit %d, stderr %q; want 101 and the refusal", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the worker ran in a requeued allocation")
	}
	if _, err := os.Lstat(filepath.Join(schema.JobDir(f.Root, f.JobID), "secret.env")); err == nil {
		t.Error("the EXIT trap did not delete the secret file")
	}
}

func TestBatchFailsWithoutSecretFile(t *testing.T) {
	f := newFixture(t, "none", "client")
	code, stderr, out := runBatch(t, f, []string{"SLURM_RESTART_COUNT=0"}, func(a *Artifacts) {
		os.Remove(filepath.Join(a.JobDir, "secret.env"))
	})
	if code != 100 || !strings.Contains(stderr, "secret file is unavailable") {
		t.Fatalf("exit %d, stderr %q; want 100", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the worker ran without its secret file")
	}
}

// TestSecretFileGoneBeforeWorker: the worker starts with its credentials
// in the environment and the secret file already deleted, even when setup
// fails to clean up after itself or turns on tracing (xtrace, or verbose,
// which would echo the lines of the sourced secret file).
func TestSecretFileGoneBeforeWorker(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ sandbox, setup string }{
		{"none", "set -x"}, {"apptainer", "set -x"}, {"pyxis", "set -x"},
		{"none", "set -v"}, {"apptainer", "set -o verbose"}, {"pyxis", "set -xv"},
	} {
		sandbox := c.sandbox
		t.Run(sandbox+"/"+c.setup, func(t *testing.T) {
			f := newFixture(t, sandbox, "client")
			f.Args["setup"] = c.setup
			stub := buildStub(t)
			f.Args["executables"].(map[string]any)["apptainer"] = stub
			f.Args["executables"].(map[string]any)["srun"] = stub
			code, stderr, out := runBatch(t, f, nil, nil)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rec stubRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.SecretExists {
				t.Error("secret.env still existed when the worker started")
			}
			prefix := ""
			if sandbox == "apptainer" {
				prefix = "APPTAINERENV_"
			}
			if rec.Env[prefix+"NVFLARE_JOB_AUTH_TOKEN"] != "tok-7d1f0e3b9c" {
				t.Errorf("worker did not get its auth token: %q", rec.Env[prefix+"NVFLARE_JOB_AUTH_TOKEN"])
			}
			if strings.Contains(stderr, "tok-7d1f0e3b9c") {
				t.Errorf("%s in setup printed a credential:\n%s", c.setup, stderr)
			}
		})
	}
}
