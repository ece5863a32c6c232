package slurmtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// sacctFormat and squeueFormat are the queries of the launcher contract (§9).
const (
	sacctFormat  = "JobIDRaw%32,JobName%128,User%64,State%64,ExitCode%32,DerivedExitCode%32"
	squeueFormat = "%i|%T|%U|%k|%j"
	// marker is set in the submitting environment; --export=NIL must keep it
	// out of the job.
	marker = "FLARE_IT_SUBMIT_MARKER"
)

// TestClusterBootstrapProbes runs the contract's bootstrap probes (§9) as the
// test account: the Slurm version and the accounting probe.
func TestClusterBootstrapProbes(t *testing.T) {
	c := slurmtest.Require(t)

	out := strings.TrimSpace(c.Run(t, "sbatch", "--version"))
	m := regexp.MustCompile(`^slurm(?:-wlm)? (\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sbatch --version = %q, want slurm X.Y.Z", out)
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	if v[0] < 23 || v[0] == 23 && (v[1] < 2 || v[1] == 2 && v[2] < 3) {
		t.Fatalf("Slurm %d.%d.%d is older than the required 23.02.3", v[0], v[1], v[2])
	}
	// The matrix runs the version it asks for (make test-slurm sets
	// FLARE_SLURM_VERSION), and every daemon and node is that version.
	release := fmt.Sprintf("%d.%02d", v[0], v[1])
	if release != c.SlurmVersion {
		t.Fatalf("sbatch --version = %q, but the cluster says it runs Slurm %s", out, c.SlurmVersion)
	}
	if want := os.Getenv("FLARE_SLURM_VERSION"); want != "" && want != release {
		t.Fatalf("FLARE_SLURM_VERSION=%s, but the cluster runs Slurm %s", want, release)
	}
	nodes := c.Run(t, "scontrol", "show", "nodes", "--oneliner")
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		if !strings.Contains(line, " Version="+release+".") {
			t.Errorf("a node runs another Slurm than %s: %s", release, line)
		}
	}
	c.Run(t, "sacct", "-X", "-n", "--starttime=now", "--format=JobIDRaw")

	if id := strings.TrimSpace(c.Run(t, "id", "-u")); id != strconv.Itoa(c.TestUID) || c.TestUID < 1000 {
		t.Fatalf("commands run as uid %s, want the non-root test account %d (>= 1000)", id, c.TestUID)
	}
	fi, err := os.Stat(c.HostPath(c.Workspace))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("workspace %s has mode %v, want 0700", c.Workspace, fi.Mode().Perm())
	}
}

// TestClusterBareJob submits bare jobs exactly as the contract compiles them
// (§8) and reads their end through squeue and sacct (§9).
func TestClusterBareJob(t *testing.T) {
	c := slurmtest.Require(t)
	ws := c.TempDir(t)

	t.Run("completed", func(t *testing.T) {
		j := submit(t, c, ws, "site-1", "job-ok-1", `
# hold the job until the test has seen it running in squeue (at most 60 s)
for i in $(seq 1 600); do [ -e release ] && break; sleep 0.1; done
echo "uid=$(id -u)"
echo "marker=${`+marker+`-unset}"
echo "pwd=$(pwd)"
exit 0
`)
		row := waitSqueue(t, c, j, "RUNNING")
		want := fmt.Sprintf("%s|RUNNING|%d|nvfl:%s|%s", j.id, c.TestUID, j.jobID, j.name)
		if row != want {
			t.Fatalf("squeue row = %q, want %q", row, want)
		}
		c.WriteFile(t, path.Join(j.runDir, "release"), nil, 0o600)

		got := waitSacct(t, c, j)
		if want := fmt.Sprintf("%s|%s|%s|COMPLETED|0:0|0:0", j.id, j.name, c.TestUser); got != want {
			t.Fatalf("sacct row = %q, want %q", got, want)
		}
		out := readOutput(t, c, j)
		for _, line := range []string{
			fmt.Sprintf("uid=%d", c.TestUID),
			"marker=unset",
			"pwd=" + j.runDir,
		} {
			if !strings.Contains(out, line+"\n") {
				t.Errorf("job output lacks %q:\n%s", line, out)
			}
		}
	})

	t.Run("failed", func(t *testing.T) {
		j := submit(t, c, ws, "site-1", "job-fail-3", `
echo "about to fail"
exit 3
`)
		got := waitSacct(t, c, j)
		if want := fmt.Sprintf("%s|%s|%s|FAILED|3:0|0:0", j.id, j.name, c.TestUser); got != want {
			t.Fatalf("sacct row = %q, want %q", got, want)
		}
		if out := readOutput(t, c, j); !strings.Contains(out, "about to fail\n") {
			t.Fatalf("job output = %q", out)
		}
	})
}

type job struct {
	jobID, name, runDir, id string
}

// submit lays out one job as the compiler would (run dir, private job dir
// with batch.sh) and submits it with the contract's sbatch argv, as the test
// account, with the scrubbed environment plus LC_ALL=C.
func submit(t *testing.T, c *slurmtest.Cluster, ws, site, jobID, body string) job {
	t.Helper()
	sum := sha256.Sum256([]byte(jobID))
	key := hex.EncodeToString(sum[:])
	runDir := path.Join(ws, jobID)
	jobDir := path.Join(ws, ".nvflare_slurm", "jobs", key)
	c.Mkdir(t, runDir, 0o700)
	c.Mkdir(t, jobDir, 0o700)
	batch := path.Join(jobDir, "batch.sh")
	c.WriteFile(t, batch, []byte("#!/bin/bash\nset -euo pipefail\n"+strings.TrimLeft(body, "\n")), 0o700)

	name := fmt.Sprintf("nvfl-%s-%s", truncate(site, 32), key[:8])
	cmd := c.Command(context.Background(), "sbatch",
		"--parsable", "--no-requeue", "--export=NIL",
		"--chdir="+runDir,
		"--nodes=1", "--ntasks=1", "--ntasks-per-node=1",
		"--job-name="+name,
		"--comment=nvfl:"+jobID,
		"--output="+runDir+"/slurm-%j.out",
		batch)
	cmd.Env = append(cmd.Env, "LC_ALL=C", marker+"=leaked-from-the-submitter")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sbatch: %v\n%s", err, stderr.String())
	}
	id := strings.TrimSuffix(stdout.String(), "\n")
	if !regexp.MustCompile(`^[0-9]+$`).MatchString(id) {
		t.Fatalf("sbatch --parsable printed %q, want one line of digits", stdout.String())
	}
	t.Logf("submitted %s as Slurm job %s (%s)", jobID, id, name)
	return job{jobID: jobID, name: name, runDir: runDir, id: id}
}

// waitSqueue polls the contract's squeue query until our job shows state.
func waitSqueue(t *testing.T, c *slurmtest.Cluster, j job, state string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		out := c.Run(t, "squeue", "-h", "--user="+strconv.Itoa(c.TestUID), "--name="+j.name, "--format="+squeueFormat)
		for _, row := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(row, j.id+"|") {
				last = row
				if strings.Split(row, "|")[1] == state {
					return row
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s never %s in squeue; last row %q", j.id, state, last)
	return ""
}

// waitSacct polls the contract's sacct query until the job's row is terminal.
// Accounting lags behind the scheduler, so an absent row is retried.
func waitSacct(t *testing.T, c *slurmtest.Cluster, j job) string {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		out := strings.TrimSpace(c.Run(t, "sacct", "-X", "-n", "-P", "--jobs="+j.id, "--format="+sacctFormat))
		if out != "" {
			rows := strings.Split(out, "\n")
			if len(rows) != 1 {
				t.Fatalf("sacct --jobs=%s returned %d rows, want 1:\n%s", j.id, len(rows), out)
			}
			last = rows[0]
			f := strings.Split(last, "|")
			if len(f) != 6 {
				t.Fatalf("sacct row %q has %d fields, want 6", last, len(f))
			}
			switch strings.Fields(f[3])[0] {
			case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED":
			default:
				return last
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("job %s has no terminal sacct row after 120 s; last %q", j.id, last)
	return ""
}

func readOutput(t *testing.T, c *slurmtest.Cluster, j job) string {
	t.Helper()
	p := c.HostPath(path.Join(j.runDir, "slurm-"+j.id+".out"))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("job output: %v", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != c.TestUID {
		t.Fatalf("%s is not owned by the test account (uid %d)", j.runDir+"/slurm-"+j.id+".out", c.TestUID)
	}
	return string(b)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TestClusterFaultHooks checks the fault hooks: with slurmdbd stopped sacct
// fails, with slurmctld stopped squeue fails, and both come back.
func TestClusterFaultHooks(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	sacct := func() error {
		return c.Command(context.Background(), "sacct", "-X", "-n", "--starttime=now", "--format=JobIDRaw").Run()
	}
	squeue := func() error {
		// With slurmctld down, squeue retries for about 10 s before failing;
		// no answer within 3 s is failure enough here.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return c.Command(ctx, "squeue", "-h", "--user="+strconv.Itoa(c.TestUID)).Run()
	}

	c.StopDbd(t)
	if err := sacct(); err == nil {
		t.Error("sacct answered with slurmdbd stopped")
	}
	c.StartDbd(t)
	if err := sacct(); err != nil {
		t.Errorf("sacct after StartDbd: %v", err)
	}

	c.StopCtld(t)
	if err := squeue(); err == nil {
		t.Error("squeue answered with slurmctld stopped")
	}
	c.StartCtld(t)
	if err := squeue(); err != nil {
		t.Errorf("squeue after StartCtld: %v", err)
	}
}
