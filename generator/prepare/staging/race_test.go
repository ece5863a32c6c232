package staging

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging/stagingtest"
)

// seed returns the seed of a randomised test and logs it.
func seed(t *testing.T) uint64 { return stagingtest.Seed(t) }

// TestMain runs the unprivileged attacker when the test binary is started
// as one (see TestStagingUnprivilegedAttacker).
func TestMain(m *testing.M) {
	if spec := os.Getenv("FLARE_SLURM_TEST_ATTACKER"); spec != "" {
		os.Exit(runAttacker(spec))
	}
	os.Exit(m.Run())
}

// bigTree is tree plus n files in a few directories, so that a fill takes
// long enough for an attacker to act in the middle of it.
func bigTree(output, tag string, n int) []*File {
	files := tree(output, tag)
	for i := range 4 {
		files = append(files, &File{Path: fmt.Sprintf("transfer/d%d", i), Dir: true, Mode: 0o755})
	}
	for i := range n {
		files = append(files, &File{Path: fmt.Sprintf("transfer/d%d/f%03d", i%4, i), Mode: 0o644, Data: []byte(tag + strings.Repeat("x", i))})
	}
	return files
}

// victimTree makes the victim of the race tests at dir and returns its
// digest.
func victimTree(t *testing.T, dir string) string {
	t.Helper()
	if err := stagingtest.Victim(dir); err != nil {
		t.Fatal(err)
	}
	return digest(t, dir)
}

// TestStagingSymlinkRace runs many stagings of one output while an
// attacker with write access to the output's parent (stagingtest.Attacker)
// swaps each staging directory for a trap of symlinks to a victim
// directory. The victim must never change, and after every staging the
// output must be the complete old or the complete new tree. The attack
// must land in the middle of a staging at least once.
func TestStagingSymlinkRace(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		d := tempDir(t)
		parent := filepath.Join(d, "parent")
		if err := os.Mkdir(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		victim := filepath.Join(d, "victim")
		before := victimTree(t, victim)
		out := filepath.Join(parent, "ws")
		const n = 120
		var want [2]string
		for i, tag := range []string{"A", "B"} {
			if _, err := stageOnce(t, out, bigTree(out, tag, n), false, Options{}); err != nil {
				t.Fatal(err)
			}
			want[i] = digest(t, out)
		}
		a := &stagingtest.Attacker{Parent: parent, Prefix: Prefix(out), Victim: victim}
		a.Start(seed(t))
		defer a.Stop()
		deadline := time.Now().Add(2 * time.Minute)
		var ok, failed, landedRuns int
		runs := 60
		if testing.Short() {
			runs = 15
		}
		for run := 0; run < runs || (a.Landed() == 0 && time.Now().Before(deadline)); run++ {
			tag := []string{"A", "B"}[run%2]
			landed := a.Landed()
			_, err := stageOnce(t, out, bigTree(out, tag, n), false, Options{})
			if a.Landed() != landed {
				landedRuns++
			}
			if err == nil {
				ok++
			} else {
				failed++
				t.Logf("run %d: %v", run, err)
			}
			if got := digest(t, victim); got != before {
				t.Fatalf("run %d: the victim changed", run)
			}
			if got := digest(t, out); got != want[run%2] && (err == nil || got != want[1-run%2]) {
				t.Fatalf("run %d (err %v): the output is not the complete new tree (or, after a failure, the old one)", run, err)
			}
			if err := a.Clean(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%d stagings (%d succeeded, %d failed cleanly); %d traps landed on a live staging directory, in %d stagings",
			ok+failed, ok, failed, a.Landed(), landedRuns)
		if a.Landed() == 0 {
			t.Fatal("no trap landed in the middle of a staging: the race was not exercised")
		}
	})
}

// attackReport is what the unprivileged attacker process reports.
type attackReport struct {
	Tries           int `json:"tries"`
	OutputLinks     int `json:"output_links"`     // symlinks planted at the absent output while a staging ran
	StagingRenames  int `json:"staging_renames"`  // staging directories renamed away (must stay 0: sticky)
	StagingWrites   int `json:"staging_writes"`   // entries created inside a staging directory (must stay 0)
	StagingPlanted  int `json:"staging_planted"`  // symlinks planted under staging-like names
	DeniedOperation int `json:"denied_operation"` // EPERM / EACCES answers
}

// runAttacker is the body of the attacker process: "parent:victim:stop".
func runAttacker(spec string) int {
	parts := strings.Split(spec, ":")
	if len(parts) != 4 {
		fmt.Fprintln(os.Stderr, "bad attacker spec")
		return 2
	}
	parent, victim, stop, prefix := parts[0], parts[1], parts[2], parts[3]
	out := filepath.Join(parent, "ws")
	var r attackReport
	deadline := time.Now().Add(2 * time.Minute)
	denied := func(err error) {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			r.DeniedOperation++
		}
	}
	for time.Now().Before(deadline) {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		r.Tries++
		ents, _ := os.ReadDir(parent)
		staging := ""
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) && e.IsDir() {
				staging = filepath.Join(parent, e.Name())
			}
		}
		if err := os.Symlink(victim, out); err == nil && staging != "" {
			if _, err := os.Lstat(staging); err == nil {
				r.OutputLinks++
			}
		}
		if staging == "" {
			continue
		}
		if err := os.Rename(staging, staging+".stolen"); err == nil {
			r.StagingRenames++
			os.Symlink(victim, staging)
		} else {
			denied(err)
		}
		if err := os.Symlink(victim, filepath.Join(staging, "new", "local", "x")); err == nil {
			r.StagingWrites++
		} else {
			denied(err)
		}
		if err := os.Symlink(victim, staging+"x"); err == nil {
			r.StagingPlanted++
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// TestStagingUnprivilegedAttacker runs the attacker as a real other
// account (uid 65534) next to a root staging in a sticky, world-writable
// parent (like /tmp): it plants a symlink to a root-only victim at the
// output whenever it is absent and tries to rename the staging directory
// and write into it. The sticky bit and the 0700 staging directory stop
// the last two (counted: they must never succeed); a symlink planted at
// the output makes the staging fail (RENAME_NOREPLACE) or be refused. The
// victim never changes and the output is never a partial tree.
func TestStagingUnprivilegedAttacker(t *testing.T) {
	d := tempDir(t)
	parent := filepath.Join(d, "shared")
	if err := os.Mkdir(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(d, "victim")
	before := victimTree(t, victim)
	out := filepath.Join(parent, "ws")
	stop := filepath.Join(d, "stop")
	cmd := stagingtest.AsOtherAccount(t, d, "FLARE_SLURM_TEST_ATTACKER="+strings.Join([]string{parent, victim, stop, Prefix(out)}, ":"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-waited
		}
	}()

	var want [2]string
	var installed, refused, failed int
	runs := 60
	if testing.Short() {
		runs = 20
	}
	for run := range runs {
		tag := []string{"A", "B"}[run%2]
		if run%3 == 0 {
			// Let the attacker find the output absent.
			if err := os.RemoveAll(out); err != nil {
				t.Fatal(err)
			}
		}
		_, err := stageOnce(t, out, bigTree(out, tag, 60), false, Options{})
		var se *Error
		switch {
		case err == nil:
			installed++
			if want[run%2] == "" {
				want[run%2] = digest(t, out)
			}
			if digest(t, out) != want[run%2] {
				t.Fatalf("run %d: the output is not the complete tree %s", run, tag)
			}
		case errors.As(err, &se) && se.Kind == UnsafeOutput:
			refused++ // the planted symlink was there when the output was opened
		case errors.As(err, &se) && se.Kind == ioFailed:
			failed++ // planted between the open and the rename
		default:
			t.Fatalf("run %d: %v (%T)", run, err, err)
		}
		if got := digest(t, victim); got != before {
			t.Fatalf("run %d: the victim changed", run)
		}
		if st, err := os.Lstat(out); err == nil && st.Mode()&os.ModeSymlink != 0 {
			// The attacker's link: remove it and hold the name with an
			// empty directory of ours, which it cannot touch.
			if err := os.Remove(out); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(out, 0o700); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("attacker: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the attacker did not stop")
	}
	var r attackReport
	if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
		t.Fatalf("attacker report %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	t.Logf("%d stagings: %d installed, %d refused (symlink at the output), %d failed at the rename; attacker: %+v", runs, installed, refused, failed, r)
	if r.StagingRenames != 0 || r.StagingWrites != 0 {
		t.Errorf("the attacker renamed or wrote into a staging directory: %+v", r)
	}
	if r.DeniedOperation == 0 || r.OutputLinks+refused+failed == 0 {
		t.Errorf("the attacker never acted during a staging: %+v", r)
	}
}
