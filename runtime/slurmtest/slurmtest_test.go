package slurmtest

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
)

// TestExclusiveUseIsNotStarved: while a shared user holds the cluster and
// an exclusive user waits, a new shared user waits behind the exclusive
// one, so overlapping shared users cannot starve it: the order of turns is
// shared, exclusive, shared. (Before the turnstile the second shared user
// got in at once and a busy package kept an exclusive test waiting until
// its lock wait ran out.)
func TestExclusiveUseIsNotStarved(t *testing.T) {
	state := t.TempDir()
	turns := make(chan string, 3)
	release := map[string]chan struct{}{"shared-1": make(chan struct{}), "exclusive": make(chan struct{}), "shared-2": make(chan struct{})}
	var once = map[string]*sync.Once{"shared-1": {}, "exclusive": {}, "shared-2": {}}
	let := func(name string) { once[name].Do(func() { close(release[name]) }) }
	var wg sync.WaitGroup
	// A failure ends the test early: let every user go, so none waits forever.
	defer wg.Wait()
	defer func() {
		for name := range release {
			let(name)
		}
	}()
	user := func(name string, exclusive bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) {
				lockUse(t, state, exclusive)
				turns <- name
				<-release[name]
			})
		}()
	}
	next := func(limit time.Duration) string {
		select {
		case n := <-turns:
			return n
		case <-time.After(limit):
			return "nobody"
		}
	}
	user("shared-1", false)
	if n := next(10 * time.Second); n != "shared-1" {
		t.Fatalf("first turn: %s", n)
	}
	user("exclusive", true)
	// Wait until the exclusive user holds the turnstile (it is waiting for
	// use.lock then): a shared flock on the turnstile is refused.
	probe := openLock(t, filepath.Join(state, "use.turnstile"))
	defer probe.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := unix.Flock(int(probe.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			break
		}
		unix.Flock(int(probe.Fd()), unix.LOCK_UN)
		if time.Now().After(deadline) {
			t.Fatal("the exclusive user never took the turnstile")
		}
	}
	user("shared-2", false)
	// Must not happen: shared-2 (or the exclusive user) getting a turn while
	// shared-1 holds the cluster and the exclusive user waits.
	if n := next(time.Second); n != "nobody" {
		t.Fatalf("%s got a turn while shared-1 held the cluster and the exclusive user waited", n)
	}
	let("shared-1")
	if n := next(10 * time.Second); n != "exclusive" {
		t.Fatalf("after shared-1: %s, want the waiting exclusive user", n)
	}
	let("exclusive")
	if n := next(10 * time.Second); n != "shared-2" {
		t.Fatalf("after the exclusive user: %s", n)
	}
	let("shared-2")
}

// TestSlurmAtLeast orders Slurm releases by year, then month, not as text.
func TestSlurmAtLeast(t *testing.T) {
	for _, c := range []struct {
		have, want string
		ok         bool
	}{
		{"24.11", "26.05", false}, {"26.05", "26.05", true}, {"26.05", "24.11", true},
		{"26.5", "26.05", true}, {"9.05", "26.05", false}, {"100.01", "26.05", true}, {"bad", "26.05", false},
	} {
		if got := (&Cluster{SlurmVersion: c.have}).SlurmAtLeast(c.want); got != c.ok {
			t.Errorf("Slurm %s at least %s = %v, want %v", c.have, c.want, got, c.ok)
		}
	}
}

// TestVersionsAreTheTestedReleases: the Slurm versions cluster.sh builds
// clusters of (the matrix make test-slurm runs) are the releases
// `flare-slurm version` says are tested (scheduler.TestedReleases), in
// the same order.
func TestVersionsAreTheTestedReleases(t *testing.T) {
	script, err := scriptPath()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, "versions").Output()
	if err != nil {
		t.Fatalf("cluster.sh versions: %v", err)
	}
	got := strings.Fields(string(out))
	if !slices.Equal(got, scheduler.TestedReleases) {
		t.Fatalf("cluster.sh versions = %v, scheduler.TestedReleases = %v", got, scheduler.TestedReleases)
	}
}

// TestUnknownVersionRefused: a FLARE_SLURM_VERSION that is not one of
// cluster.sh's versions is refused by every command (exit 2, naming the
// accepted ones) before anything is built or started.
func TestUnknownVersionRefused(t *testing.T) {
	script, err := scriptPath()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"env", "up", "build", "down"} {
		c := exec.Command("bash", script, cmd)
		c.Env = append(c.Environ(), "FLARE_SLURM_VERSION=25.11", "FLARE_SLURM_STATE="+t.TempDir(), "FLARE_SLURM_ROOT="+t.TempDir()+"/root")
		out, err := c.CombinedOutput()
		if c.ProcessState == nil || c.ProcessState.ExitCode() != 2 ||
			!strings.Contains(string(out), "FLARE_SLURM_VERSION=25.11 is not one of: "+strings.Join(scheduler.TestedReleases, " ")) {
			t.Errorf("cluster.sh %s with FLARE_SLURM_VERSION=25.11: %v\n%s", cmd, err, out)
		}
	}
}

// TestEnvOnAMachineThatNeverBuiltTheCluster: `cluster.sh env` names the
// root even where nothing of the cluster exists yet (not even the cache
// directory above the root). The tests read it before they start the
// cluster themselves, so on a new machine FLARE_SLURM_IT=1 go test (or make
// bench-federation) once failed with "no ROOT" instead of building it.
func TestEnvOnAMachineThatNeverBuiltTheCluster(t *testing.T) {
	script, err := scriptPath()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "cache", "never-made", "root")
	c := exec.Command("bash", script, "env")
	c.Env = append(c.Environ(), "FLARE_SLURM_STATE="+t.TempDir(), "FLARE_SLURM_ROOT="+root)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("cluster.sh env: %v", err)
	}
	if !slices.Contains(strings.Split(string(out), "\n"), "ROOT="+root) {
		t.Errorf("cluster.sh env with FLARE_SLURM_ROOT=%s (nothing above it made) does not say ROOT=%s:\n%s", root, root, out)
	}
}
