package prepare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging/stagingtest"
)

// testSeed returns the seed of a randomised test and logs it.
func testSeed(t *testing.T) uint64 { return stagingtest.Seed(t) }

// TestPrepareSymlinkRace runs prepare again and again while another
// account with write access to the output's parent swaps every staging
// directory for symlinks to a victim directory (stagingtest.Attacker).
// Before prepare worked through directory descriptors, the clean-up
// listed the swapped-in symlink and emptied the victim, and the staging
// wrote into it. Now the victim never changes, and after every prepare
// the output is the complete old or the complete new workspace.
func TestPrepareSymlinkRace(t *testing.T) {
	t.Parallel() // its own kit, output and processes: it overlaps the others
	f := crashKit(t, 100)
	parent := filepath.Join(f.dir, "shared")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(parent, "ws")
	victim := filepath.Join(f.dir, "victim")
	if err := stagingtest.Victim(victim); err != nil {
		t.Fatal(err)
	}
	before := digest(t, victim)
	configs := [2]string{filepath.Join(f.dir, "a.yaml"), filepath.Join(f.dir, "b.yaml")}
	var want [2]string
	for i, port := range []int{8102, 9000} {
		if err := os.WriteFile(configs[i], fmt.Appendf(nil, "%s  internal_port: %d\n", bareConfig, port), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), Options{Kit: f.kit, Config: configs[i], Output: out}); err != nil {
			t.Fatal(err)
		}
		want[i] = digest(t, out)
	}
	a := &stagingtest.Attacker{Parent: parent, Prefix: stagingPrefix(out), Victim: victim}
	a.Start(testSeed(t))
	defer a.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	var ok, failed int
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for run := 0; run < runs || (a.Landed() == 0 && time.Now().Before(deadline)); run++ {
		_, err := Run(context.Background(), Options{Kit: f.kit, Config: configs[run%2], Output: out})
		if err == nil {
			ok++
		} else {
			failed++
			t.Logf("run %d: %v", run, err)
		}
		if digest(t, victim) != before {
			t.Fatalf("run %d: the victim directory changed", run)
		}
		if got := digest(t, out); got != want[run%2] && (err == nil || got != want[1-run%2]) {
			t.Fatalf("run %d (err %v): the output is neither the complete new nor (after a failure) the complete old workspace", run, err)
		}
		if err := a.Clean(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d prepares (%d succeeded, %d failed cleanly); %d traps landed on a live staging directory", ok+failed, ok, failed, a.Landed())
	if a.Landed() == 0 {
		t.Fatal("no trap landed in the middle of a prepare: the race was not exercised")
	}
}
