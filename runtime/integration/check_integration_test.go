package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/check"
	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// checkSlurmYAML is the example slurm.yaml reduced to the test cluster:
// sandbox none, the root's python3, the default partition, a 1-second
// poll and the internal port free on this host.
const checkSlurmYAML = `runtime: slurm
job_launcher:
  sandbox: none
  python_path: /usr/bin/python3
  parent_host: localhost
  sbatch_directives:
    partition: %s
  internal_port: %d
  internal_connection_security: clear
  poll_interval: 1
  pending_timeout: 600
  submit_timeout: 30
`

// preparedExample copies examples/site-1 into the root, prepares it with a
// sandbox-none slurm.yaml as the test account and returns the workspace.
func preparedExample(t *testing.T, c *slurmtest.Cluster, bin, base string, port int, setup, studies string) string {
	t.Helper()
	kit := path.Join(base, "site-1")
	src := filepath.Join("..", "..", "examples", "site-1")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := path.Join(kit, filepath.ToSlash(rel))
		if d.IsDir() {
			c.Mkdir(t, dst, 0o700)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c.WriteFile(t, dst, data, 0o600)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if studies != "" {
		c.WriteFile(t, path.Join(kit, "local", "study_runtime.yaml"), []byte(studies), 0o600)
	}
	cfg := path.Join(base, "slurm.yaml")
	yaml := fmt.Sprintf(checkSlurmYAML, c.Partition, port)
	switch {
	case strings.HasPrefix(setup, "parent_host: "):
		yaml = strings.Replace(yaml, "parent_host: localhost", setup, 1)
	case strings.HasPrefix(setup, "sandbox: "):
		yaml = strings.Replace(yaml, "sandbox: none", setup, 1)
	case strings.HasPrefix(setup, "poll_interval: "):
		yaml = strings.Replace(yaml, "poll_interval: 1", setup, 1)
	case setup != "":
		yaml += "  setup: " + setup + "\n"
	}
	c.WriteFile(t, cfg, []byte(yaml), 0o600)
	ws := path.Join(base, "ws")
	out, err := c.Command(context.Background(), bin, "prepare", kit, "--config", cfg, "--output", ws).CombinedOutput()
	if err != nil {
		t.Fatalf("prepare: %v\n%s", err, out)
	}
	return ws
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type checkDoc struct {
	Status string
	Data   struct {
		Probes  []check.Row
		Summary check.Summary
		Seconds float64
	}
}

// TestCheckAllProbes runs flare-slurm check on a workspace prepared from
// the examples (sandbox none) and pins each probe's result, that its
// evidence names the Slurm job sacct knows in the state the probe expects,
// the JUnit report, and that no probe job, job dir or run dir is left.
func TestCheckAllProbes(t *testing.T) {
	c := slurmtest.Require(t)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	ws := preparedExample(t, c, bin, base, freePort(t), "", "")
	junit := path.Join(base, "check.xml")

	s := &site{t: t, c: c, base: base, ws: ws, bin: bin}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	out, errs, code := s.run(ctx, "check", "--workspace", ws, "--json", "--junit", junit, "--timeout", "4m", "--gpus", "1")
	t.Logf("check took %v; progress:\n%s", time.Since(start).Round(time.Millisecond), errs)
	if code != 0 {
		t.Errorf("check exited %d, want 0\n%s", code, out)
	}
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	// The state sacct must hold for each probe's job ("" for a probe that
	// submits none).
	want := map[string]string{
		"bootstrap": "", "success": "COMPLETED", "failure": "FAILED", "worker-code": "FAILED", "timeout": "TIMEOUT",
		"pending-abort": "CANCELLED", "pending-timeout": "CANCELLED", "running-abort": "CANCELLED", "restart": "FAILED",
		"environment": "COMPLETED", "secrets": "COMPLETED", "connectivity": "COMPLETED", "filesystem": "COMPLETED",
		"accounting": "COMPLETED", "resources": "COMPLETED", "gpus": "COMPLETED", "multi-node": "",
	}
	// The test cluster enforces no CPU or memory limit (task/none, no
	// cgroups: runtime/slurmtest/README.md): resources must say so. The
	// multi-node probe needs --nodes (TestCheckMultiNode).
	results := map[string]string{"resources": "warn", "multi-node": "skip"}
	if len(doc.Data.Probes) != len(check.Names()) || len(want) != len(check.Names()) {
		t.Fatalf("%d rows, want one per probe (%v)", len(doc.Data.Probes), check.Names())
	}
	for i, r := range doc.Data.Probes {
		if r.Name != check.Names()[i] {
			t.Errorf("row %d is %s, want %s (report order)", i, r.Name, check.Names()[i])
		}
		wantResult := "pass"
		if w, ok := results[r.Name]; ok {
			wantResult = w
		}
		if r.Result != wantResult {
			t.Errorf("%s: %s (want %s): %s", r.Name, r.Result, wantResult, r.Evidence)
			continue
		}
		if want[r.Name] == "" {
			if r.SlurmJobID != "" {
				t.Errorf("%s submitted Slurm job %s", r.Name, r.SlurmJobID)
			}
			continue
		}
		if r.SlurmJobID == "" || !strings.HasPrefix(r.Evidence, "Slurm job "+r.SlurmJobID+":") || !strings.HasPrefix(r.JobID, "check-"+r.Name+"-") {
			t.Errorf("%s: row %+v does not name its jobs", r.Name, r)
			continue
		}
		acct := strings.Split(strings.TrimSpace(c.Run(t, "sacct", "-n", "-X", "-P", "--jobs="+r.SlurmJobID, "-o", "JobID,JobName,State")), "\n")
		if len(acct) != 1 || !strings.HasPrefix(acct[0], r.SlurmJobID+"|nvfl-") || !strings.HasPrefix(strings.Split(acct[0], "|")[2], want[r.Name]) {
			t.Errorf("%s: sacct knows Slurm job %s as %q, want state %s", r.Name, r.SlurmJobID, acct, want[r.Name])
		}
	}
	if s := doc.Data.Summary; s.Pass != len(want)-2 || s.Warn != 1 || s.Skip != 1 || s.Fail != 0 {
		t.Errorf("summary %+v", s)
	}
	for _, r := range doc.Data.Probes {
		switch r.Name {
		case "resources":
			if !strings.Contains(r.Evidence, "CPUs not confined") || !strings.Contains(r.Evidence, "memory not enforced") {
				t.Errorf("resources evidence: %s", r.Evidence)
			}
		case "gpus":
			if !strings.Contains(r.Evidence, `CUDA_VISIBLE_DEVICES="0" (1 GPUs), 1 asked for`) {
				t.Errorf("gpus evidence: %s", r.Evidence)
			}
		case "accounting":
			if !strings.Contains(r.Evidence, "account "+c.Account+", partition "+c.Partition) {
				t.Errorf("accounting evidence: %s", r.Evidence)
			}
		}
	}

	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suite    struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(s.read(junit)), &suites); err != nil || suites.Tests != len(want) || suites.Failures != 0 || len(suites.Suite.Cases) != len(want) {
		t.Errorf("JUnit report: %+v (%v)", suites, err)
	}

	// Nothing is left: no run dir, no job dir, no queued probe job.
	ents, err := os.ReadDir(c.HostPath(ws))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "check-") {
			t.Errorf("run dir %s left in the workspace", e.Name())
		}
	}
	jobs, _ := os.ReadDir(c.HostPath(path.Join(ws, ".nvflare_slurm", "jobs")))
	for _, e := range jobs {
		t.Errorf("job dir %s left", e.Name())
	}
	for _, r := range doc.Data.Probes {
		if q := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", r.SlurmJobID, "-o", "%T")); q != "" && q != "COMPLETED" && q != "CANCELLED" && q != "FAILED" && q != "TIMEOUT" {
			t.Errorf("%s: Slurm job %s still %s", r.Name, r.SlurmJobID, q)
		}
	}
}

// TestCheckTableAndFailure: the text table (header, one row per probe, the
// summary line) of a passing run, and failing probes, each exit 4 with the
// row's evidence: a setup that exports the submit-side marker into the
// worker fails environment; a parent port nobody listens on fails
// connectivity; --timeout cancels the live probe job.
func TestCheckTableAndFailure(t *testing.T) {
	c := slurmtest.Require(t)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ws := preparedExample(t, c, bin, base, freePort(t), "", "")
	s := &site{t: t, c: c, base: base, ws: ws, bin: bin}
	out, errs, code := s.run(ctx, "check", "--workspace", ws, "--only", "success,pending-abort", "--timeout", "90s")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "PROBE ") || !strings.HasPrefix(lines[1], "success ") ||
		!strings.HasPrefix(lines[2], "pending-abort ") || !strings.HasPrefix(lines[3], "check passed: 2 pass, 0 fail, 0 warn, 0 skip in ") {
		t.Errorf("exit %d, table:\n%s\n%s", code, out, errs)
	}
	t.Logf("table:\n%s", out)

	// --keep leaves the run dir: the probe's spec, its observation and the
	// job's output file.
	out, errs, code = s.run(ctx, "check", "--workspace", ws, "--only", "success", "--keep", "--json", "--timeout", "90s")
	var kept checkDoc
	if err := json.Unmarshal([]byte(out), &kept); err != nil || code != 0 || len(kept.Data.Probes) != 1 {
		t.Fatalf("--keep: exit %d %v\n%s\n%s", code, err, out, errs)
	}
	for _, f := range []string{"flare_slurm_probe.py", "probe.json", "observed.json", "slurm-" + kept.Data.Probes[0].SlurmJobID + ".out"} {
		if !s.exists(path.Join(ws, kept.Data.Probes[0].JobID, f)) {
			t.Errorf("--keep: %s is not in the run dir", f)
		}
	}

	base2 := path.Join(base, "leaky")
	c.Mkdir(t, base2, 0o700)
	ws2 := preparedExample(t, c, bin, base2, freePort(t), "export "+"FLARE_SLURM_CHECK_SUBMIT_SIDE"+"=from-setup", "")
	s2 := &site{t: t, c: c, base: base2, ws: ws2, bin: bin}
	out, errs, code = s2.run(ctx, "check", "--workspace", ws2, "--only", "environment", "--json", "--timeout", "90s")
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if code != 4 || len(doc.Data.Probes) != 1 || doc.Data.Probes[0].Result != "fail" ||
		!strings.Contains(doc.Data.Probes[0].Evidence, "FLARE_SLURM_CHECK_SUBMIT_SIDE"+" (set only on the submit side) reached the worker") ||
		doc.Data.Summary.Fail != 1 || !strings.Contains(errs, "check FAILED: 0 pass, 1 fail") {
		t.Errorf("exit %d (want 4), rows %+v\nstderr %s", code, doc.Data.Probes, errs)
	}

	// The parent's port closed: parent_host names a node of the node
	// network where nothing listens on the internal port.
	nodes := c.MultiNodes(t, 1)
	base3 := path.Join(base, "closed")
	c.Mkdir(t, base3, 0o700)
	ws3 := preparedExample(t, c, bin, base3, freePort(t), "parent_host: "+nodes.Names[0], "")
	s3 := &site{t: t, c: c, base: base3, ws: ws3, bin: bin}
	out, errs, code = s3.run(ctx, "check", "--workspace", ws3, "--only", "connectivity", "--json", "--timeout", "90s")
	doc = checkDoc{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if code != 4 || len(doc.Data.Probes) != 1 || doc.Data.Probes[0].Result != "fail" ||
		!strings.Contains(doc.Data.Probes[0].Evidence, "could not reach the parent at "+nodes.Names[0]+":") {
		t.Errorf("closed port: exit %d (want 4), rows %+v\nstderr %s", code, doc.Data.Probes, errs)
	}

	// --timeout ends the run: the probe job still running is cancelled and
	// its run dir removed; the row fails saying the job had not ended.
	out, errs, code = s.run(ctx, "check", "--workspace", ws, "--only", "timeout", "--json", "--timeout", "6s")
	doc = checkDoc{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if code != 4 || len(doc.Data.Probes) != 1 || doc.Data.Probes[0].Result != "fail" || !strings.Contains(doc.Data.Probes[0].Evidence, "not ended") {
		t.Fatalf("exit %d (want 4), rows %+v\nstderr %s", code, doc.Data.Probes, errs)
	}
	id := doc.Data.Probes[0].SlurmJobID
	acct := strings.TrimSpace(c.Run(t, "sacct", "-n", "-X", "-P", "--jobs="+id, "-o", "State"))
	if !strings.HasPrefix(acct, "CANCELLED") {
		t.Errorf("the timed-out probe's Slurm job %s is %q in sacct, want CANCELLED", id, acct)
	}
	if s.exists(path.Join(ws, doc.Data.Probes[0].JobID)) {
		t.Errorf("run dir %s left", doc.Data.Probes[0].JobID)
	}
}

// TestCheckStudy: --study runs the probes as jobs of that study: its env
// values arrive exactly, its secret_env value (from the parent's
// environment) reaches the worker and nowhere else, and its partition is
// the one sacct records. An unknown study is refused before anything is
// submitted; without --gpus the gpus probe is skipped with the reason.
func TestCheckStudy(t *testing.T) {
	c := slurmtest.Require(t)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	studies := "format_version: 2\nstudies:\n  s1:\n    env:\n      S1_MODE: \"a b'c\"\n    secret_env:\n      S1_KEY: {source: CHECK_S1_KEY}\n" +
		"    slurm:\n      partition: " + c.Partition + "\n"
	ws := preparedExample(t, c, bin, base, freePort(t), "", studies)
	s := &site{t: t, c: c, base: base, ws: ws, bin: bin, env: []string{"CHECK_S1_KEY=s1-secret-" + fmt.Sprint(time.Now().UnixNano())}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out, errs, code := s.run(ctx, "check", "--workspace", ws, "--study", "s1", "--only", "environment,secrets,accounting,gpus", "--json", "--timeout", "90s")
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if code != 0 || len(doc.Data.Probes) != 4 {
		t.Fatalf("exit %d, rows %+v\n%s", code, doc.Data.Probes, errs)
	}
	for _, r := range doc.Data.Probes {
		var want, result = "", "pass"
		switch r.Name {
		case "secrets":
			want = "NVFLARE_JOB_AUTH_TOKEN, S1_KEY arrived"
		case "accounting":
			want = "partition " + c.Partition
		case "gpus":
			want, result = "no GPUs asked for", "skip"
		}
		if r.Result != result || !strings.Contains(r.Evidence, want) {
			t.Errorf("%s: %s %s, want %s with %q", r.Name, r.Result, r.Evidence, result, want)
		}
	}

	out, errs, code = s.run(ctx, "check", "--workspace", ws, "--study", "nope", "--json")
	if code != 1 || !strings.Contains(out, `study \"nope\" has no entry`) {
		t.Errorf("unknown study: exit %d %s %s", code, out, errs)
	}
}

// TestCheckMultiNode: check --nodes 2, as a job of a study on the
// multi-node partition (sandbox none): both nodes, each in its own network
// namespace, reach a listener on the first node over the node network.
func TestCheckMultiNode(t *testing.T) {
	c, nodes := slurmtest.RequireNodes(t, 2)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	studies := "format_version: 2\nstudies:\n  multi:\n    slurm:\n      partition: " + nodes.Partition + "\n"
	ws := preparedExample(t, c, bin, base, freePort(t), "", studies)
	s := &site{t: t, c: c, base: base, ws: ws, bin: bin}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errs, code := s.run(ctx, "check", "--workspace", ws, "--study", "multi", "--nodes", "2", "--only", "multi-node", "--json", "--timeout", "100s")
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s\n%s", err, out, errs)
	}
	if code != 0 || len(doc.Data.Probes) != 1 {
		t.Fatalf("exit %d, rows %+v\n%s", code, doc.Data.Probes, errs)
	}
	r := doc.Data.Probes[0]
	want := fmt.Sprintf("2 of 2 nodes (%s, %s) reached the first node %s:", nodes.Names[0], nodes.Names[1], nodes.Names[0])
	if r.Result != "pass" || !strings.Contains(r.Evidence, want) || !strings.Contains(r.Evidence, "srun exit 0") {
		t.Errorf("%s: %s, want pass with %q", r.Result, r.Evidence, want)
	}
	acct := strings.TrimSpace(c.Run(t, "sacct", "-n", "-X", "-P", "--jobs="+r.SlurmJobID, "-o", "Partition,NNodes,State"))
	if acct != nodes.Partition+"|2|COMPLETED" {
		t.Errorf("sacct has Slurm job %s as %q", r.SlurmJobID, acct)
	}
}

// TestCheckAccountingStopped: with slurmdbd stopped, the bootstrap row
// fails with the accounting error, accounting fails with it, every other
// probe is skipped (no job is submitted) and check exits 4.
func TestCheckAccountingStopped(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	ws := preparedExample(t, c, bin, base, freePort(t), "", "")
	s := &site{t: t, c: c, base: base, ws: ws, bin: bin}
	c.StopDbd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errs, code := s.run(ctx, "check", "--workspace", ws, "--json", "--timeout", "60s")
	c.StartDbd(t)
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s\n%s", err, out, errs)
	}
	if code != 4 || len(doc.Data.Probes) != len(check.Names()) {
		t.Fatalf("exit %d (want 4), rows %+v\n%s", code, doc.Data.Probes, errs)
	}
	for _, r := range doc.Data.Probes {
		want := "skip"
		if r.Name == "bootstrap" || r.Name == "accounting" {
			want = "fail"
			if !strings.Contains(r.Evidence, "slurm accounting (slurmdbd) is required and did not answer") {
				t.Errorf("%s evidence: %s", r.Name, r.Evidence)
			}
		}
		if r.Result != want || r.SlurmJobID != "" {
			t.Errorf("%s: %s (job %q), want %s and no job: %s", r.Name, r.Result, r.SlurmJobID, want, r.Evidence)
		}
	}
}

// TestCheckSecretFileKept: a test build whose batch.sh template no longer
// removes secret.env after sourcing it (go build -overlay) fails the
// secrets probe: the worker starts with the secret file still there.
func TestCheckSecretFileKept(t *testing.T) {
	c := slurmtest.Require(t)
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "templates", "batch.sh.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	const removal = "source \"${_nvfl_secret}\"\nrm -f -- \"${_nvfl_secret}\"\n"
	if !strings.Contains(string(tmpl), removal) {
		t.Fatalf("templates/batch.sh.tmpl has no %q to mutate", removal)
	}
	dir := t.TempDir()
	mutated := filepath.Join(dir, "batch.sh.tmpl")
	if err := os.WriteFile(mutated, []byte(strings.Replace(string(tmpl), removal, "source \"${_nvfl_secret}\"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join("..", "..", "templates", "batch.sh.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: mutated}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(dir, "flare-slurm")
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", built, "github.com/flare-slurm/flare-slurm/cmd/flare-slurm")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -overlay: %v\n%s", err, out)
	}

	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, built, bin)
	ws := preparedExample(t, c, bin, base, freePort(t), "", "")
	s := &site{t: t, c: c, base: base, ws: ws, bin: bin}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errs, code := s.run(ctx, "check", "--workspace", ws, "--only", "secrets", "--json", "--timeout", "90s")
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s\n%s", err, out, errs)
	}
	if code != 4 || len(doc.Data.Probes) != 1 || doc.Data.Probes[0].Result != "fail" ||
		!strings.Contains(doc.Data.Probes[0].Evidence, "secret.env still existed when the worker started") {
		t.Errorf("exit %d (want 4), rows %+v\n%s", code, doc.Data.Probes, errs)
	}
}

// TestCheckInterrupted: SIGINT (Ctrl-C) while a probe job runs: check
// cancels it (sacct: CANCELLED), removes its run dir, prints the rows and
// exits 4.
func TestCheckInterrupted(t *testing.T) {
	c := slurmtest.Require(t)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	ws := preparedExample(t, c, bin, base, freePort(t), "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.Command(ctx, bin, "check", "--workspace", ws, "--only", "timeout", "--json")
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var progress strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			progress.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "timeout") && strings.HasSuffix(sc.Text(), "started") {
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the timeout probe did not start within 60 s")
	}
	time.Sleep(3 * time.Second) // submitted and running
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("check after SIGINT: %v (want exit 4)\n%s\n%s", err, out.String(), progress.String())
	}
	var doc checkDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Data.Probes) != 1 || doc.Data.Probes[0].Result != "fail" {
		t.Fatalf("rows after SIGINT: %v %s", err, out.String())
	}
	r := doc.Data.Probes[0]
	if r.SlurmJobID == "" {
		t.Fatalf("the probe job was not submitted before SIGINT: %+v", r)
	}
	if acct := strings.TrimSpace(c.Run(t, "sacct", "-n", "-X", "-P", "--jobs="+r.SlurmJobID, "-o", "State")); !strings.HasPrefix(acct, "CANCELLED") {
		t.Errorf("Slurm job %s is %q after SIGINT, want CANCELLED", r.SlurmJobID, acct)
	}
	if _, err := os.Lstat(c.HostPath(path.Join(ws, r.JobID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run dir %s left after SIGINT: %v", r.JobID, err)
	}
	if jobs, _ := os.ReadDir(c.HostPath(path.Join(ws, ".nvflare_slurm", "jobs"))); len(jobs) != 0 {
		t.Errorf("job dir %s left after SIGINT", jobs[0].Name())
	}
}

// TestCheckContainers runs check with every probe (the 1-minute timeout
// one included, and --gpus 1 on the cluster's stand-in GPU devices) on a
// workspace of each container sandbox, with the real apptainer and
// pyxis+enroot and the cluster's worker image: every row is judged against
// the real runtime. filesystem passes (startup/ and local/ are mounted
// read-only, which the stand-ins could not show), resources warns (the
// test cluster enforces no CPU or memory limit), multi-node is skipped (no
// --nodes); everything else passes.
func TestCheckContainers(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	for _, sandbox := range []string{slurmtest.SandboxApptainer, slurmtest.SandboxPyxis} {
		t.Run(sandbox, func(t *testing.T) {
			t.Parallel()
			c := slurmtest.Require(t)
			image := c.RequireContainers(t, sandbox)
			base := c.TempDir(t)
			bin := path.Join(base, "flare-slurm")
			c.CopyIn(t, buildCLI(t), bin)
			ws := preparedExample(t, c, bin, base, freePort(t), "sandbox: "+sandbox+"\n  image: "+image, "")
			s := &site{t: t, c: c, base: base, ws: ws, bin: bin}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			start := time.Now()
			out, errs, code := s.run(ctx, "check", "--workspace", ws, "--gpus", "1", "--json", "--timeout", "270s")
			t.Logf("check took %v", time.Since(start).Round(time.Second))
			var doc checkDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("check --json: %v\n%s\n%s", err, out, errs)
			}
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, errs)
			}
			results := map[string]string{"resources": "warn", "multi-node": "skip"}
			seen := map[string]bool{}
			for _, r := range doc.Data.Probes {
				seen[r.Name] = true
				want := "pass"
				if w, ok := results[r.Name]; ok {
					want = w
				}
				if r.Result != want {
					t.Errorf("%s: %s (want %s): %s", r.Name, r.Result, want, r.Evidence)
				}
				if r.Name == "filesystem" && !strings.Contains(r.Evidence, "mounts as configured") {
					t.Errorf("filesystem evidence does not say every mount has its mode: %s", r.Evidence)
				}
			}
			for _, name := range []string{"success", "timeout", "secrets", "environment", "filesystem", "connectivity", "gpus", "restart"} {
				if !seen[name] {
					t.Errorf("no %s row", name)
				}
			}
		})
	}
}

// TestCheckInterruptedLeavesNoSecret (issue 25 item 3): a probe job that
// never starts keeps its secret.env, with the job's credentials and the
// study's secrets, in its job dir; check interrupted while such a job is
// queued, with --keep (which leaves live jobs alone), left it on disk and
// did not say so. The probe removes it when it ends, whatever happened,
// and its row says so. A 30 s poll interval holds the probe before it
// sees the job pending, so the interrupt lands while the job is queued.
func TestCheckInterruptedLeavesNoSecret(t *testing.T) {
	c := slurmtest.Require(t)
	base := c.TempDir(t)
	bin := path.Join(base, "flare-slurm")
	c.CopyIn(t, buildCLI(t), bin)
	studies := "format_version: 2\nstudies:\n  s1:\n    secret_env:\n      S1_KEY: {source: CHECK_S1_KEY}\n"
	ws := preparedExample(t, c, bin, base, freePort(t), "poll_interval: 30", studies)
	secret := "s1-secret-" + fmt.Sprint(time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.Command(ctx, bin, "check", "--workspace", ws, "--study", "s1", "--only", "pending-abort", "--keep", "--json")
	cmd.Env = append(cmd.Env, "CHECK_S1_KEY="+secret)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var progress strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			progress.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "pending-abort") && strings.HasSuffix(sc.Text(), "started") {
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the pending-abort probe did not start within 60 s")
	}
	// Submitted (sbatch returns at once), not yet seen pending: the
	// first observation after the submission comes one poll interval later.
	jobs := c.HostPath(path.Join(ws, ".nvflare_slurm", "jobs"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(jobs, "*", "handle.json")); len(m) == 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no handle.json within 20 s\n%s", progress.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var doc checkDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Data.Probes) != 1 {
		t.Fatalf("rows after SIGINT: %v %s\n%s", err, out.String(), progress.String())
	}
	r := doc.Data.Probes[0]
	if r.SlurmJobID != "" {
		defer c.Run(t, "scancel", r.SlurmJobID) // --keep left it queued
	}
	left, _ := filepath.Glob(filepath.Join(jobs, "*", "secret.env"))
	if len(left) != 0 {
		t.Errorf("secret.env left on disk after an interrupted probe: %v", left)
	}
	if !strings.Contains(r.Evidence, "removed the probe job's secret.env (the job never started)") {
		t.Errorf("the row does not say the secret file was removed: %+v", r)
	}
	if strings.Contains(out.String()+progress.String(), secret) {
		t.Error("the study secret reached check's output")
	}
}
