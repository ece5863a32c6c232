package prepare

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cli is the flare-slurm binary buildCLI builds, once per test binary,
// into a temp dir that TestMain removes.
var cli struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildCLI builds flare-slurm once per test binary (a link costs more than
// most tests here) and returns its path; callers only run it.
func buildCLI(t testing.TB) string {
	t.Helper()
	cli.once.Do(func() {
		cli.dir, cli.err = os.MkdirTemp("", "flare-slurm-cli-")
		if cli.err != nil {
			return
		}
		bin := filepath.Join(cli.dir, "flare-slurm")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/flare-slurm")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			cli.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		cli.bin = bin
	})
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.bin
}

// TestMain removes the binary buildCLI built.
func TestMain(m *testing.M) {
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

// crashKit is the example client kit plus n filler files, so that a
// prepare takes long enough for a kill to land in the middle of it.
func crashKit(t testing.TB, n int) *fixture {
	f := newFixture(t, "site-1", bareConfig)
	for i := range n {
		dir := filepath.Join(f.kit, "local", "custom", fmt.Sprintf("pkg%02d", i%20))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.py", i)), []byte(fmt.Sprintf("# module %d\nX = %d\n", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestCrashLeavesOldOrNewWorkspace SIGKILLs prepare subprocesses at random
// moments over an existing workspace. Trials alternate between two configs
// (different internal_port), so each one replaces workspace A with B or B
// with A; after every kill the output must be byte-for-byte one of the
// two complete trees. At the end, one more prepare must succeed and leave
// no staging directory behind.
func TestCrashLeavesOldOrNewWorkspace(t *testing.T) {
	t.Parallel() // its own kit, output and processes: it overlaps the others
	const trials = 120
	bin := buildCLI(t)
	f := crashKit(t, 100)
	out := filepath.Join(f.dir, "ws")
	configs := [2]string{filepath.Join(f.dir, "a.yaml"), filepath.Join(f.dir, "b.yaml")}
	for i, port := range []int{8102, 9000} {
		if err := os.WriteFile(configs[i], []byte(fmt.Sprintf("%s  internal_port: %d\n", bareConfig, port)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prepareWith := func(cfg string) *exec.Cmd {
		return exec.Command(bin, "prepare", f.kit, "--config", cfg, "--output", out)
	}
	// The two complete trees, and how long a full prepare takes.
	var want [2]string
	var durations []time.Duration
	for round := range 3 {
		for i := range configs {
			start := time.Now()
			if msg, err := prepareWith(configs[i]).CombinedOutput(); err != nil {
				t.Fatalf("prepare: %v\n%s", err, msg)
			}
			durations = append(durations, time.Since(start))
			if round == 0 {
				want[i] = digest(t, out)
			}
		}
	}
	if want[0] == want[1] {
		t.Fatal("the two configs give the same workspace")
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	full := durations[len(durations)/2]

	rng := rand.New(rand.NewPCG(1, testSeed(t)))
	current := 1 // the last setup round wrote config b
	var stayedOld, becameNew, finished, midPrepare int
	for trial := range trials {
		next := 1 - current
		cmd := prepareWith(configs[next])
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Half the kills anywhere in a prepare, half late in it, around
		// the swap and the removal of the old tree.
		delay := time.Duration(rng.Int64N(int64(full)))
		if trial%2 == 1 {
			delay = full/2 + time.Duration(rng.Int64N(int64(full)))*2/3
		}
		started := time.Now()
		timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		err := cmd.Wait()
		elapsed := time.Since(started)
		timer.Stop()
		killed := false
		if ee, ok := err.(*exec.ExitError); ok {
			ws, _ := ee.Sys().(syscall.WaitStatus)
			killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
			if !killed {
				t.Fatalf("trial %d: prepare failed: %v", trial, err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if killed && len(siblings(t, f.dir, stagingPrefix(out))) > 0 {
			// SIGKILL left the staging directory: the kill landed after
			// prepare had started writing.
			midPrepare++
		}
		switch got := digest(t, out); {
		case !killed:
			finished++
			// Follow the machine's pace: kills aim at the duration of the
			// prepares that ran to the end lately.
			durations = append(durations[1:], elapsed)
			sorted := append([]time.Duration(nil), durations...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			full = sorted[len(sorted)/2]
			if got != want[next] {
				t.Fatalf("trial %d: a completed prepare left a workspace that is not the new one", trial)
			}
			current = next
		case got == want[current]:
			stayedOld++
		case got == want[next]:
			becameNew++
			current = next
		default:
			t.Fatalf("trial %d: killed after %v, the workspace is neither the complete old nor the complete new tree", trial, delay)
		}
		// On a loaded machine a prepare takes longer than the calibration
		// and every kill lands before the swap: while none has landed
		// after it yet, aim later (every ten kills, half as late again).
		if becameNew+finished == 0 && stayedOld > 0 && stayedOld%10 == 0 {
			full = full * 3 / 2
		}
	}
	t.Logf("%d SIGKILL trials (full prepare ≈ %v): %d killed before the swap (old kept), %d killed after it (new in place), %d finished first; %d kills landed mid-prepare (a staging directory was left)",
		trials, full, stayedOld, becameNew, finished, midPrepare)
	if stayedOld == 0 || becameNew+finished == 0 {
		t.Errorf("kills did not land on both sides of the swap: %d old, %d new, %d finished", stayedOld, becameNew, finished)
	}
	if midPrepare == 0 {
		t.Error("no kill landed while prepare was writing (no staging directory was ever left)")
	}

	if msg, err := prepareWith(configs[0]).CombinedOutput(); err != nil {
		t.Fatalf("final prepare: %v\n%s", err, msg)
	}
	if got := digest(t, out); got != want[0] {
		t.Error("the final prepare did not produce the expected workspace")
	}
	if s := siblings(t, f.dir, stagingPrefix(out)); len(s) > 0 {
		t.Errorf("staging directories left after the final prepare: %v", s)
	}
}

// TestSignalCleansUp sends SIGTERM, SIGINT or SIGHUP (a lost SSH session)
// at random moments: the
// prepare stops, the output is the old or the new tree, and no staging
// directory is left even without another prepare.
func TestSignalCleansUp(t *testing.T) {
	t.Parallel() // its own kit, output and processes: it overlaps the others
	bin := buildCLI(t)
	f := crashKit(t, 100)
	out := filepath.Join(f.dir, "ws")
	cfgB := filepath.Join(f.dir, "b.yaml")
	if err := os.WriteFile(cfgB, []byte(bareConfig+"  internal_port: 9000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if msg, err := exec.Command(bin, "prepare", f.kit, "--config", cfgB, "--output", out).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	full := time.Since(start)
	wantB := digest(t, out)
	if msg, err := exec.Command(bin, "prepare", f.kit, "--config", f.config, "--output", out).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	wantA := digest(t, out)
	rng := rand.New(rand.NewPCG(2, testSeed(t)))
	cfgs, wants := [2]string{f.config, cfgB}, [2]string{wantA, wantB}
	current := 0
	var interrupted, early, finished int
	deadline := time.Now().Add(2 * time.Minute)
	for trial := 0; trial < 12 || (interrupted == 0 && time.Now().Before(deadline)); trial++ {
		next := 1 - current
		cmd := exec.Command(bin, "prepare", f.kit, "--config", cfgs[next], "--output", out)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Past the process start-up, so that the handler is installed.
		delay := 3*time.Millisecond + time.Duration(rng.Int64N(int64(full)))
		sig := []os.Signal{syscall.SIGTERM, os.Interrupt, syscall.SIGHUP}[trial%3]
		timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(sig) })
		err := cmd.Wait()
		timer.Stop()
		switch ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); {
		case ws.Signaled():
			// The signal came before the handler was installed; no
			// staging directory can exist yet.
			early++
		case strings.Contains(stderr.String(), "interrupted; the output was not changed"):
			// The handler ran in the middle of the prepare: proof that
			// the signal landed mid-prepare.
			interrupted++
		case err == nil:
			finished++
		default:
			t.Fatalf("trial %d: %v after %v: %v\n%s", trial, sig, delay, err, stderr.String())
		}
		switch got := digest(t, out); got {
		case wants[current]:
		case wants[next]:
			current = next
		default:
			t.Fatalf("trial %d: %v after %v left a workspace that is neither old nor new", trial, sig, delay)
		}
		if s := siblings(t, f.dir, stagingPrefix(out)); len(s) > 0 {
			t.Fatalf("trial %d: %v after %v left staging directories %v", trial, sig, delay, s)
		}
	}
	t.Logf("signals: %d interrupted a running prepare, %d came before the handler, %d after the prepare finished", interrupted, early, finished)
	if interrupted == 0 {
		t.Error("no signal landed in the middle of a prepare")
	}
}
