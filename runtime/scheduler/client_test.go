package scheduler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
	"github.com/flare-slurm/flare-slurm/internal/trust"
	"github.com/flare-slurm/flare-slurm/schema"
)

// script writes an executable bash stand-in into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExecRunnerArgvNotShell(t *testing.T) {
	dir := t.TempDir()
	p := script(t, dir, "echoargs", `printf '%s\n' "$@"`)
	hostile := "$(touch " + filepath.Join(dir, "pwned") + ")"
	r := execRunner{}.Run(context.Background(), Command{Argv: []string{p, hostile, "a b"}, Timeout: 5 * time.Second})
	if !r.ok() || string(r.Stdout) != hostile+"\na b\n" {
		t.Fatalf("r = %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("argument was evaluated by a shell")
	}
}

func TestExecRunnerTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "survived")
	p := script(t, dir, "slow", "(sleep 1; touch "+marker+") &\nsleep 30")
	start := time.Now()
	r := execRunner{}.Run(context.Background(), Command{Argv: []string{p}, Timeout: 200 * time.Millisecond})
	if !r.TimedOut || r.ok() || r.ExitCode != -1 {
		t.Fatalf("r = %+v", r)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a grandchild outlived the timeout")
	}
}

func TestExecRunnerCaps(t *testing.T) {
	dir := t.TempDir()
	big := script(t, dir, "big", "head -c $((16*1024*1024+1)) /dev/zero")
	r := execRunner{}.Run(context.Background(), Command{Argv: []string{big}, Timeout: 20 * time.Second})
	if !r.StdoutOverflow || len(r.Stdout) != maxStdout {
		t.Fatalf("overflow=%v len=%d", r.StdoutOverflow, len(r.Stdout))
	}
	exact := script(t, dir, "exact", "head -c $((16*1024*1024)) /dev/zero")
	r = execRunner{}.Run(context.Background(), Command{Argv: []string{exact}, Timeout: 20 * time.Second})
	if r.StdoutOverflow || !r.ok() {
		t.Fatalf("exact limit: overflow=%v ok=%v", r.StdoutOverflow, r.ok())
	}
	noisy := script(t, dir, "noisy", "head -c 70000 /dev/zero | tr '\\0' e >&2; exit 3")
	r = execRunner{}.Run(context.Background(), Command{Argv: []string{noisy}, Timeout: 20 * time.Second})
	if r.ExitCode != 3 || len(r.Stderr) != maxStderr+len(stderrTruncated) || !strings.HasSuffix(r.Stderr, stderrTruncated) {
		t.Fatalf("rc=%d stderr len=%d", r.ExitCode, len(r.Stderr))
	}
}

func TestExecRunnerStartError(t *testing.T) {
	r := execRunner{}.Run(context.Background(), Command{Argv: []string{"/nonexistent/sbatch"}, Timeout: time.Second})
	if r.StartErr == nil || r.ok() {
		t.Fatalf("r = %+v", r)
	}
}

func TestScrubEnv(t *testing.T) {
	in := []string{"PATH=/bin", "SBATCH_PARTITION=x", "SQUEUE_FORMAT=y", "SACCT_FORMAT=z", "SCANCEL_USER=u",
		"SLURM_CLUSTERS=c", "SLURM_EXPORT_ENV=ALL", "SLURM_HINT=h", "SLURM_MEM_PER_CPU=1", "SLURM_MEM_PER_GPU=1",
		"SLURM_MEM_PER_NODE=1", "LC_ALL=de_DE", "SLURM_CONF=/etc/slurm.conf", "SLURM_TIME_FORMAT=relative"}
	got := strings.Join(slurmenv.Scrub(in), " ")
	// SLURM_TIME_FORMAT is an input of squeue and sacct: dropped (issue 28 item 12)
	if got != "PATH=/bin SLURM_CONF=/etc/slurm.conf LC_ALL=C" {
		t.Fatalf("ScrubEnv = %s", got)
	}
	got = strings.Join(New(Paths{}, 1, "u", append(in, "SECRET=s"), Timeouts{}, nil, "SECRET").Env, " ")
	if got != "PATH=/bin SLURM_CONF=/etc/slurm.conf LC_ALL=C SLURM_TIME_FORMAT=standard" {
		t.Fatalf("QueryEnv = %s", got)
	}
}

// fakeRunner answers from a function and records every command.
type fakeRunner struct {
	calls  []Command
	answer func(c Command) Result
}

func (f *fakeRunner) Run(_ context.Context, c Command) Result {
	f.calls = append(f.calls, c)
	return f.answer(c)
}

func testClient(f *fakeRunner) *Client {
	c := New(Paths{"/s/sbatch", "/s/squeue", "/s/sacct", "/s/scancel"}, 1000, "alice",
		[]string{"SQUEUE_FORMAT=%all", "HOME=/h"}, Timeouts{Submit: 30 * time.Second, Query: 10 * time.Second, Cancel: 5 * time.Second}, f)
	c.Location = time.UTC
	return c
}

func TestClientArgvAndClassification(t *testing.T) {
	f := &fakeRunner{answer: func(c Command) Result {
		return Result{Stdout: []byte("12|RUNNING|1000|nvfl:a|n|None\n")}
	}}
	c := testClient(f)
	q, err := c.Queue(context.Background(), []string{"12", "13"})
	if err != nil || len(q.Rows) != 1 {
		t.Fatalf("q=%+v err=%v", q, err)
	}
	got := strings.Join(f.calls[0].Argv, " ")
	if got != "/s/squeue -h --local --user=1000 --jobs=12,13 --format=%i|%T|%U|%k|%j|%r" {
		t.Fatalf("argv %s", got)
	}
	if f.calls[0].Timeout != 10*time.Second || strings.Join(f.calls[0].Env, " ") != "HOME=/h LC_ALL=C SLURM_TIME_FORMAT=standard" {
		t.Fatalf("timeout %v env %v", f.calls[0].Timeout, f.calls[0].Env)
	}

	// Unavailable: timeout, start error, non-zero exit.
	for _, res := range []Result{{TimedOut: true, ExitCode: -1}, {StartErr: os.ErrNotExist, ExitCode: -1}, {ExitCode: 1, Stderr: "slurm_load_jobs error: Unable to contact slurm controller"}} {
		f.answer = func(Command) Result { return res }
		if _, err := c.Queue(context.Background(), []string{"12"}); !IsUnavailable(err) {
			t.Errorf("%+v: err = %v, want unavailable", res, err)
		}
		if _, err := c.Accounting(context.Background(), []string{"12"}); !IsUnavailable(err) {
			t.Errorf("%+v: sacct err = %v, want unavailable", res, err)
		}
	}
	// squeue's answer for ids that left the queue is an empty answer.
	f.answer = func(Command) Result {
		return Result{ExitCode: 1, Stderr: "slurm_load_jobs error: Invalid job id specified\n"}
	}
	if q, err := c.Queue(context.Background(), []string{"12"}); err != nil || len(q.Rows) != 0 {
		t.Fatalf("invalid id: %+v %v", q, err)
	}
	// Overflow is a protocol error, not an answer.
	f.answer = func(Command) Result { return Result{StdoutOverflow: true} }
	if _, err := c.Queue(context.Background(), []string{"12"}); !isProtocol(err) {
		t.Fatalf("overflow: %v", err)
	}
}

func TestClientSacctSubmitCancel(t *testing.T) {
	f := &fakeRunner{answer: func(c Command) Result { return Result{Stdout: []byte("77\n")} }}
	c := testClient(f)
	id, cl, err := c.Submit(context.Background(), []string{"sbatch", "--parsable", "/j/batch.sh"}, []string{"LC_ALL=C"})
	if err != nil || id != "77" || cl != "" {
		t.Fatalf("submit %q %q %v", id, cl, err)
	}
	if got := strings.Join(f.calls[0].Argv, " "); got != "/s/sbatch --parsable /j/batch.sh" || f.calls[0].Timeout != 30*time.Second {
		t.Fatalf("sbatch argv %s timeout %v", got, f.calls[0].Timeout)
	}
	f.answer = func(c Command) Result { return Result{} }
	if _, err := c.Accounting(context.Background(), []string{"1", "2"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls[1].Argv, " "); got != "/s/sacct -X -n -P --jobs=1,2 --format="+sacctFormat {
		t.Fatalf("sacct argv %s", got)
	}
	if err := c.Cancel(context.Background(), "5"); err != nil {
		t.Fatal(err)
	}
	if err := c.CancelOnCluster(context.Background(), "5", "b"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls[2].Argv, " "); got != "/s/scancel -Q --me 5" || f.calls[2].Timeout != 5*time.Second {
		t.Fatalf("scancel argv %s", got)
	}
	if got := strings.Join(f.calls[3].Argv, " "); got != "/s/scancel -M b -Q --me 5" {
		t.Fatalf("scancel -M argv %s", got)
	}
	if err := c.ProbeAccounting(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls[4].Argv, " "); got != "/s/sacct -X -n --starttime=now --format=JobIDRaw" {
		t.Fatalf("probe argv %s", got)
	}
}

func TestResolvePaths(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	for _, n := range []string{"sbatch", "squeue", "sacct", "scancel"} {
		script(t, bin, n, "exit 0")
	}
	// A stable symlink is followed to its target.
	os.Mkdir(filepath.Join(dir, "current"), 0o755)
	os.Symlink(filepath.Join(bin, "sbatch"), filepath.Join(dir, "current", "sbatch"))
	p, err := ResolvePaths(schema.Executables{Sbatch: filepath.Join(dir, "current", "sbatch")}, "/nonexistent:"+bin, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Sbatch != filepath.Join(bin, "sbatch") || p.Scancel != filepath.Join(bin, "scancel") {
		t.Fatalf("paths %+v", p)
	}
	// Every command that cannot be used is reported, one per line, each
	// naming the settings file to fix or the parent's PATH.
	const settings = "/ws/local/resources.json.default"
	_, err = ResolvePaths(schema.Executables{Scancel: filepath.Join(dir, "nope")}, "/nonexistent", settings)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"Slurm command sbatch: not found on the parent's PATH",
		"Slurm command squeue: not found on the parent's PATH",
		"Slurm command sacct: not found on the parent's PATH",
		// no raw "lstat /x:" in the message (issue 28 item 6)
		"Slurm command scancel (executables.scancel): " + filepath.Join(dir, "nope") + " cannot be resolved: no such file or directory",
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Fatalf("errors:\n got %q\nwant %q", got, want)
	}
	// Each names its fix: slurm.yaml, never the generated settings file;
	// the site's own resources.json is fixed in place.
	var ces CommandErrors
	if !errors.As(err, &ces) || len(ces) != 4 {
		t.Fatalf("not CommandErrors: %T %v", err, err)
	}
	fromSlurmYAML := "set job_launcher.executables.sbatch in the site's slurm.yaml and prepare the workspace again (prepare writes resources.json.default; do not edit it), or add its directory to the parent's PATH"
	if got := ces[0].Fix(); got != fromSlurmYAML {
		t.Errorf("fix of a command not on PATH:\n got %q\nwant %q", got, fromSlurmYAML)
	}
	if got := ces[3].Fix(); got != "set job_launcher.executables.scancel in the site's slurm.yaml and prepare the workspace again (prepare writes resources.json.default; do not edit it)" {
		t.Errorf("fix of a configured command: %q", got)
	}
	override := &CommandError{Name: "squeue", Configured: true, Settings: "/ws/local/resources.json", Err: errors.New("x")}
	if got := override.Fix(); got != "fix executables.squeue in /ws/local/resources.json (the site's override of the prepared settings)" {
		t.Errorf("fix in the site's override: %q", got)
	}
	os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644)
	if _, err := ResolvePaths(schema.Executables{Squeue: filepath.Join(dir, "plain")}, bin, ""); err == nil || !strings.Contains(err.Error(), "executables.squeue") {
		t.Fatalf("err = %v", err)
	}
	if _, err := ResolvePaths(schema.Executables{Sacct: bin}, bin, ""); err == nil || !strings.Contains(err.Error(), "not an executable regular file") {
		t.Fatalf("dir: err = %v", err)
	}
}

// sbatch that printed a job id and then failed (exit status, timeout)
// yields the id with a *SubmittedError; a failure without an id, or one
// where sbatch never started, stays a plain failure (issue 15 item 6).
func TestSubmitReportsIDOfFailedSbatch(t *testing.T) {
	for _, c := range []struct {
		res           Result
		id, cluster   string
		submitted     bool
		diagSubstring string
	}{
		{Result{Stdout: []byte("4242\n"), ExitCode: 3, Stderr: "late"}, "4242", "", true, "rc=3"},
		{Result{Stdout: []byte("4242;cl2\n"), ExitCode: 1}, "4242", "cl2", true, "rc=1"},
		{Result{Stdout: []byte("4242\n"), ExitCode: -1, TimedOut: true}, "4242", "", true, "rc=timeout"},
		{Result{Stdout: []byte("Submitted batch job 4242\n"), ExitCode: 1}, "", "", false, ""},
		{Result{ExitCode: 1, Stderr: "sbatch: error: Unable to contact slurm controller"}, "", "", false, ""},
		{Result{Stdout: []byte("4242\n"), StartErr: os.ErrNotExist, ExitCode: -1}, "", "", false, ""},
	} {
		f := &fakeRunner{answer: func(Command) Result { return c.res }}
		id, cluster, err := testClient(f).Submit(context.Background(), []string{"sbatch", "x"}, nil)
		var se *SubmittedError
		got := errors.As(err, &se)
		if got != c.submitted || id != c.id || cluster != c.cluster || err == nil {
			t.Errorf("%+v: Submit = %q %q %v", c.res, id, cluster, err)
			continue
		}
		if got && (se.ID != c.id || !strings.Contains(se.Diag, c.diagSubstring)) {
			t.Errorf("%+v: SubmittedError %+v", c.res, se)
		}
	}
}

// TestResolvePathsTrust: a Slurm command another account could replace is
// refused with the path and the fix (issue 9 item 14): a world-writable
// file, one in a world-writable directory that is not sticky, one owned by
// an account that is neither root nor the one running flare-slurm.
func TestResolvePathsTrust(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	for _, n := range []string{"sbatch", "squeue", "sacct", "scancel"} {
		script(t, bin, n, "exit 0")
	}
	if _, err := ResolvePaths(schema.Executables{}, bin, ""); err != nil {
		t.Fatalf("trusted commands: %v", err)
	}
	sbatch := filepath.Join(bin, "sbatch")
	os.Chmod(sbatch, 0o757)
	if _, err := ResolvePaths(schema.Executables{}, bin, ""); err == nil || !strings.Contains(err.Error(), "writable by every account (mode 0757)") || !strings.Contains(err.Error(), "chmod o-w "+sbatch) {
		t.Errorf("world-writable command: err = %v", err)
	}
	os.Chmod(sbatch, 0o755)

	os.Chmod(bin, 0o777)
	if _, err := ResolvePaths(schema.Executables{}, bin, ""); err == nil || !strings.Contains(err.Error(), "which is writable by every account (mode 0777)") {
		t.Errorf("world-writable directory: err = %v", err)
	}
	os.Chmod(bin, 0o777|os.ModeSticky) // sticky, like /tmp: others cannot replace our files
	if _, err := ResolvePaths(schema.Executables{}, bin, ""); err != nil {
		t.Errorf("sticky directory: %v", err)
	}
	os.Chmod(bin, 0o755)

	// Writable by a group other than root's.
	if os.Geteuid() == 0 {
		os.Chown(sbatch, 0, 100)
		os.Chmod(sbatch, 0o775)
		if _, err := ResolvePaths(schema.Executables{}, bin, ""); err == nil || !strings.Contains(err.Error(), "writable by group 100 (mode 0775)") {
			t.Errorf("group-writable command: err = %v", err)
		}
		os.Chmod(sbatch, 0o755)
		os.Chown(bin, 0, 100)
		os.Chmod(bin, 0o775)
		if _, err := ResolvePaths(schema.Executables{}, bin, ""); err == nil || !strings.Contains(err.Error(), "writable by group 100 (mode 0775)") {
			t.Errorf("group-writable directory: err = %v", err)
		}
		os.Chmod(bin, 0o755)
		// A directory above the command owned by another account, sticky
		// or not: that account could rename the command away.
		os.Chown(bin, 4242, 0)
		for _, mode := range []os.FileMode{0o755, 0o777 | os.ModeSticky} {
			os.Chmod(bin, mode)
			if _, err := ResolvePaths(schema.Executables{}, bin, ""); err == nil || !strings.Contains(err.Error(), "which is owned by uid 4242") {
				t.Errorf("directory owned by another account (mode %v): err = %v", mode, err)
			}
		}
		os.Chown(bin, 0, 0)
		os.Chmod(bin, 0o755)
	}

	// Owned by another account: as root, give the file to uid 4242; as
	// any other account, check it against a different euid.
	euid := os.Geteuid()
	if euid == 0 {
		if err := os.Chown(sbatch, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := ResolvePaths(schema.Executables{}, bin, ""); err == nil || !strings.Contains(err.Error(), "is owned by uid 4242, neither root nor this account (uid 0)") {
			t.Errorf("foreign owner: err = %v", err)
		}
	} else if _, err := trust.Resolve(sbatch, euid+1); err == nil || !strings.Contains(err.Error(), "neither root nor this account") {
		t.Errorf("foreign owner: err = %v", err)
	}
}

// squeue is asked with --local (no REQUEST_FED_INFO RPC) exactly when
// every id is a job of this cluster alone: one federated id (origin cluster
// bits above bit 25) or an id that is not a number makes it the
// federation-wide query, whose answer is right for every kind of job.
func TestQueueLocalOnlyForLocalJobIDs(t *testing.T) {
	for _, tc := range []struct {
		ids   []string
		local bool
	}{
		{[]string{"1"}, true},
		{[]string{"12", "67108863"}, true},        // 0x3FFFFFF, slurm.h MAX_JOB_ID
		{[]string{"67108864"}, false},             // cluster 1, local id 0
		{[]string{"12", "134217741"}, false},      // cluster 2's job 13 beside a local one
		{[]string{"4294967293"}, false},           // MAX_FED_JOB_ID
		{[]string{"12", "12_3"}, false},           // not a plain id: ask the whole federation
		{[]string{"99999999999999999999"}, false}, // beyond 32 bits
	} {
		f := &fakeRunner{answer: func(c Command) Result { return Result{} }}
		if _, err := testClient(f).Queue(context.Background(), tc.ids); err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(f.calls[0].Argv, "--local"); got != tc.local {
			t.Errorf("ids %v: --local %v, want %v (argv %q)", tc.ids, got, tc.local, f.calls[0].Argv)
		}
	}
}

// The whole-queue listing gc uses for job dirs without a handle must ask
// with --all: without it squeue omits this account's jobs in partitions
// configured Hidden=YES (proved on the real cluster by
// TestGCHandlelessDirOfHiddenPartitionJob).
func TestQueueAllAsksForHiddenPartitions(t *testing.T) {
	f := &fakeRunner{answer: func(c Command) Result { return Result{} }}
	c := testClient(f)
	if _, err := c.QueueAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls[0].Argv, " "); got != "/s/squeue -h --all --user=1000 --format=%i|%T|%U|%k|%j|%r" {
		t.Fatalf("argv %s", got)
	}
}
