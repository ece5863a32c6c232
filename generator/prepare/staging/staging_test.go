package staging

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/schema"
)

func TestStageInstallsANewOutputAndItsParents(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		d := tempDir(t)
		out := filepath.Join(d, "a", "b", "ws")
		mustStage(t, out, "one")
		if got := readTag(t, out); got != "one" {
			t.Fatalf("tag %q", got)
		}
		st, err := os.Stat(filepath.Join(out, "startup"))
		if err != nil || st.Mode().Perm() != 0o500 {
			t.Fatalf("startup mode %v, %v", st.Mode(), err)
		}
		if st, _ := os.Stat(out); st.Mode().Perm() != 0o700 {
			t.Errorf("root mode %v", st.Mode())
		}
		if s := stagings(t, out); len(s) > 0 {
			t.Errorf("staging left: %v", s)
		}
	})
}

func TestStageReplacesAWorkspaceOfThisOutput(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		d := tempDir(t)
		out := filepath.Join(d, "ws")
		mustStage(t, out, "one")
		// Runtime files inside the old workspace, read-only ones too.
		if err := os.MkdirAll(filepath.Join(out, "run", "ro"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "run", "ro", "f"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(out, "run", "ro"), 0o500); err != nil {
			t.Fatal(err)
		}
		mustStage(t, out, "two")
		if got := readTag(t, out); got != "two" {
			t.Fatalf("tag %q", got)
		}
		if _, err := os.Lstat(filepath.Join(out, "run")); !os.IsNotExist(err) {
			t.Errorf("the old workspace's files are in the new one: %v", err)
		}
		if s := stagings(t, out); len(s) > 0 {
			t.Errorf("staging (with the old tree) left: %v", s)
		}
	})
}

// A parent another account may write lets that account swap prepare's
// staging directory: refused, naming the directory and the fix, with
// nothing written. Sticky shared directories (like /tmp) are fine.
func TestStagingOpenRefusesParentsOthersCanWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (to chown the parent to another account)")
	}
	for _, tc := range []struct {
		name  string
		mode  os.FileMode
		owner int
		want  string // "" = accepted
	}{
		{"private", 0o700, 0, ""},
		{"world-readable", 0o755, 0, ""},
		{"sticky world-writable", 0o777 | os.ModeSticky, 0, ""},
		{"sticky group-writable", 0o775 | os.ModeSticky, 0, ""},
		{"group-writable", 0o775, 0, "is writable by its group (mode 0775) and not sticky"},
		{"world-writable", 0o757, 0, "is writable by every account (mode 0757) and not sticky"},
		{"both", 0o777, 0, "is writable by its group and every account (mode 0777) and not sticky"},
		{"another owner", 0o755, 65534, "(uid 65534), not to"},
		{"another owner, sticky", 0o777 | os.ModeSticky, 65534, "belongs to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tempDir(t)
			parent := filepath.Join(d, "shared")
			if err := os.Mkdir(parent, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(parent, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(parent, tc.owner, -1); err != nil {
				t.Fatal(err)
			}
			for _, out := range []string{filepath.Join(parent, "ws"), filepath.Join(parent, "new", "ws")} {
				_, err := stageOnce(t, out, tree(out, "x"), false, Options{})
				if tc.want == "" {
					if err != nil {
						t.Fatalf("%s refused: %v", out, err)
					}
					continue
				}
				se := wantKind(t, err, UnsafeOutput)
				if !strings.Contains(se.Message, parent+" ") || !strings.Contains(se.Message, tc.want) || !strings.Contains(se.Message, "nothing was written") {
					t.Errorf("message %q lacks the directory or %q", se.Message, tc.want)
				}
				if !strings.Contains(se.Hint, "chmod") && !strings.Contains(se.Hint, "run prepare as") {
					t.Errorf("hint %q says no fix", se.Hint)
				}
				ents, _ := os.ReadDir(parent)
				if len(ents) != 0 {
					t.Errorf("a refused prepare wrote %v", ents)
				}
			}
		})
	}
}

// The output and the path to it: a symlink (the resolved path changed
// since it was resolved) or a non-directory is refused, untouched.
func TestStagingOpenRefusesSymlinksAndFiles(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		d := tempDir(t)
		victim := filepath.Join(d, "victim")
		mustStage(t, victim, "victim")
		before := digest(t, victim)
		link := filepath.Join(d, "link")
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		_, err := stageOnce(t, link, tree(link, "x"), true, Options{})
		if se := wantKind(t, err, UnsafeOutput); !strings.Contains(se.Message, "is a symlink") {
			t.Errorf("message %q", se.Message)
		}
		_, err = stageOnce(t, filepath.Join(link, "ws"), tree(filepath.Join(link, "ws"), "x"), true, Options{})
		if se := wantKind(t, err, UnsafeOutput); !strings.Contains(se.Message, "symlink") {
			t.Errorf("message %q", se.Message)
		}
		file := filepath.Join(d, "file")
		if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = stageOnce(t, file, tree(file, "x"), true, Options{})
		if se := wantKind(t, err, UnsafeOutput); !strings.Contains(se.Message, "not a directory") {
			t.Errorf("message %q", se.Message)
		}
		if digest(t, victim) != before {
			t.Error("the symlink's target changed")
		}
		if b, _ := os.ReadFile(file); string(b) != "keep" {
			t.Error("the file changed")
		}
	})
}

// prepare replaces only what it made: an absent or empty output, or a
// workspace whose marker names this output. Anything else needs force.
func TestStagingRecognisesWorkspacesByTheirMarker(t *testing.T) {
	d := tempDir(t)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		setup  func(out string)
		state  State
		reason string
	}{
		"absent":    {func(string) {}, outputAbsent, ""},
		"empty":     {func(out string) { os.Mkdir(out, 0o755) }, outputEmpty, ""},
		"workspace": {func(out string) { write(filepath.Join(out, schema.ResourcesDefaultPath), string(markerJSON(out))) }, outputWorkspace, ""},
		"thesis": {func(out string) { write(filepath.Join(out, "chapter1.tex"), "\\chapter{x}") },
			OutputOther, "it holds no local/resources.json.default"},
		"moved workspace": {func(out string) {
			write(filepath.Join(out, schema.ResourcesDefaultPath), string(markerJSON("/old/place")))
		},
			OutputOther, `names the workspace "/old/place"`},
		"other runtime": {func(out string) {
			write(filepath.Join(out, schema.ResourcesDefaultPath), `{"components": [{"id": "k8s_launcher", "args": {"workspace_path": "`+out+`"}}]}`)
		}, OutputOther, "has no slurm_launcher component naming a workspace"},
		"not json": {func(out string) { write(filepath.Join(out, schema.ResourcesDefaultPath), "{") }, OutputOther, "is not valid JSON"},
		"marker is a symlink": {func(out string) {
			write(filepath.Join(d, "forged.json"), string(markerJSON(out)))
			os.MkdirAll(filepath.Join(out, "local"), 0o755)
			os.Symlink(filepath.Join(d, "forged.json"), filepath.Join(out, schema.ResourcesDefaultPath))
		}, OutputOther, "cannot be read"},
		"local is a symlink": {func(out string) {
			write(filepath.Join(d, "forged", "resources.json.default"), string(markerJSON(out)))
			os.MkdirAll(out, 0o755)
			os.Symlink(filepath.Join(d, "forged"), filepath.Join(out, "local"))
		}, OutputOther, "cannot be read"},
		"marker is a fifo": {func(out string) {
			os.MkdirAll(filepath.Join(out, "local"), 0o755)
			syscall.Mkfifo(filepath.Join(out, schema.ResourcesDefaultPath), 0o644)
		}, OutputOther, "cannot be read"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(d, strings.ReplaceAll(name, " ", "-"))
			tc.setup(out)
			before := digest(t, out)
			target, err := Open(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			if target.State != tc.state || !strings.Contains(target.Reason, tc.reason) {
				t.Errorf("state %d reason %q, want %d %q", target.State, target.Reason, tc.state, tc.reason)
			}
			target.Close()
			_, err = stageOnce(t, out, tree(out, "new"), false, Options{})
			if tc.state != OutputOther {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			se := wantKind(t, err, NotWorkspace)
			if !strings.Contains(se.Message, out) || !strings.Contains(se.Hint, "--force") {
				t.Errorf("message %q hint %q", se.Message, se.Hint)
			}
			if digest(t, out) != before {
				t.Fatal("a refused prepare changed the directory")
			}
			if s := stagings(t, out); len(s) > 0 {
				t.Errorf("staging left: %v", s)
			}
			// --force replaces it.
			if _, err := stageOnce(t, out, tree(out, "new"), true, Options{}); err != nil {
				t.Fatal(err)
			}
			if readTag(t, out) != "new" {
				t.Error("force did not replace it")
			}
		})
	}
}

// After the exchange only the output's parent is fsynced: its entry is
// what makes the new workspace durable (syncfs made the tree durable
// before).
func TestInstallFsyncsOnlyTheParent(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	for _, tag := range []string{"new output", "exchange"} {
		var synced []string
		opts := Options{syncDirs: func(ds ...*dirfd.Dir) error {
			for _, x := range ds {
				synced = append(synced, x.Path())
			}
			return syncDirs(ds...)
		}}
		if _, err := stageOnce(t, out, tree(out, tag), false, opts); err != nil {
			t.Fatal(err)
		}
		if len(synced) != 1 || synced[0] != d {
			t.Errorf("%s: fsynced %v, want only the parent %s", tag, synced, d)
		}
	}
}

// exchangeUnsupported answers RENAME_EXCHANGE the way NFS does.
func exchangeUnsupported(fail func(from, to string, flags uint) error) func(*dirfd.Dir, string, *dirfd.Dir, string, uint) error {
	return func(from *dirfd.Dir, fromName string, to *dirfd.Dir, toName string, flags uint) error {
		if flags&unix.RENAME_EXCHANGE != 0 {
			return unix.EINVAL
		}
		if fail != nil {
			if err := fail(fromName, toName, flags); err != nil {
				return err
			}
		}
		return dirfd.Rename(from, fromName, to, toName, flags)
	}
}

func TestInstallFallbackWithoutExchange(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	mustStage(t, out, "one")
	if _, err := stageOnce(t, out, tree(out, "two"), false, Options{rename: exchangeUnsupported(nil)}); err != nil {
		t.Fatal(err)
	}
	if readTag(t, out) != "two" {
		t.Fatal("the fallback did not install the new tree")
	}
	if s := stagings(t, out); len(s) > 0 {
		t.Errorf("staging left: %v", s)
	}
}

// The fallback's second rename fails: the first is undone.
func TestInstallFallbackRestoresOnFailure(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	mustStage(t, out, "one")
	before := digest(t, out)
	fail := func(from, to string, _ uint) error {
		if from == newName {
			return unix.EIO
		}
		return nil
	}
	_, err := stageOnce(t, out, tree(out, "two"), false, Options{rename: exchangeUnsupported(fail)})
	wantKind(t, err, ioFailed)
	if digest(t, out) != before {
		t.Fatal("the old workspace was not put back")
	}
	if s := stagings(t, out); len(s) > 0 {
		t.Errorf("staging left: %v", s)
	}
}

// A workspace the fallback could not put back must survive every later
// prepare: it is the only copy of the old workspace.
func TestOldWorkspaceLeftByFailedUndoIsNeverDeleted(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	mustStage(t, out, "one")
	before := digest(t, out)
	fail := func(from, to string, _ uint) error {
		if from == newName || from == asideName {
			return unix.EIO // the rename in, and the undo
		}
		return nil
	}
	_, err := stageOnce(t, out, tree(out, "two"), false, Options{rename: exchangeUnsupported(fail)})
	se := wantKind(t, err, oldKept)
	s := stagings(t, out)
	if len(s) != 1 {
		t.Fatalf("staging directories %v, want the one holding the old workspace", s)
	}
	kept := filepath.Join(s[0], asideName)
	if digest(t, kept) != before {
		t.Fatal("the old workspace is not intact")
	}
	if !strings.Contains(se.Message, kept) || !strings.Contains(se.Hint, "mv "+kept+" "+out) {
		t.Errorf("message %q / hint %q do not say where the old workspace is", se.Message, se.Hint)
	}
	// Later prepares (the output is absent, then present) keep it.
	for range 2 {
		warnings, err := stageOnce(t, out, tree(out, "three"), false, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if digest(t, kept) != before {
			t.Fatal("a later prepare deleted or changed the old workspace")
		}
		if !strings.Contains(strings.Join(warnings, "\n"), kept) {
			t.Errorf("warnings %q do not name %s", warnings, kept)
		}
	}
}

// abandoned makes a staging directory for out as a dead process on host
// would have made it, holding entries.
func abandoned(t *testing.T, out, host, suffix string, entries ...string) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(out), fmt.Sprintf("%sh%sp%ds%s-%s", Prefix(out), host, 1<<22, "1", suffix))
	for _, e := range entries {
		if err := os.MkdirAll(filepath.Join(dir, e, "local"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if len(entries) == 0 {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A prepare killed between the two renames of the fallback leaves the
// output absent and the old workspace in its staging directory: a later
// prepare keeps it; once the output exists again (the swap completed), an
// old tree without a mark is garbage.
func TestOldWorkspaceOfKilledFallbackIsKept(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	dead := abandoned(t, out, hostTag(), "00bb", newName, asideName)
	warnings, err := stageOnce(t, out, tree(out, "one"), false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dead, asideName, "local")); err != nil {
		t.Fatal("a later prepare deleted the only copy of the old workspace")
	}
	if !strings.Contains(strings.Join(warnings, "\n"), filepath.Join(dead, asideName)) {
		t.Errorf("warnings %q do not name it", warnings)
	}
	if err := os.RemoveAll(dead); err != nil {
		t.Fatal(err)
	}
	done := abandoned(t, out, hostTag(), "00cc", asideName)
	if _, err := stageOnce(t, out, tree(out, "two"), false, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(done); !os.IsNotExist(err) {
		t.Errorf("the abandoned staging directory %s of a completed swap was not removed", done)
	}
}

// Liveness is the staging directory's lock: an unlocked one of this host
// and account is abandoned and removed (read-only directories inside do
// not stop it); a locked one, one of another host and one of another
// account are left (the last two with a warning).
func TestAbandonedStagingIsRemovedLiveOnesKept(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	gone := abandoned(t, out, hostTag(), "0011", newName)
	ro := filepath.Join(gone, newName, "local")
	if err := os.WriteFile(filepath.Join(ro, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	// A live prepare of this process's pid: its name says alive, but
	// the lock decides, and this one is held.
	live := filepath.Join(d, fmt.Sprintf("%sh%sp%ds%s-0022", Prefix(out), hostTag(), os.Getpid(), startTime(os.Getpid())))
	if err := os.MkdirAll(filepath.Join(live, newName), 0o700); err != nil {
		t.Fatal(err)
	}
	holder, err := dirfd.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	otherHost := abandoned(t, out, "00000000", "0033", newName)
	otherUser := abandoned(t, out, hostTag(), "0044", newName)
	if err := os.Chown(otherUser, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	warnings, err := stageOnce(t, out, tree(out, "one"), false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for dir, keep := range map[string]bool{gone: false, live: true, otherHost: true, otherUser: true} {
		_, err := os.Lstat(dir)
		if exists := err == nil; exists != keep {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(dir), exists, keep)
		}
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"removed the abandoned staging directory " + gone, otherHost + ": it was not made by a prepare on this host", otherUser + ": it belongs to another user"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	// Once the holder is gone, the next prepare removes it.
	holder.Close()
	if _, err := stageOnce(t, out, tree(out, "two"), false, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(live); !os.IsNotExist(err) {
		t.Error("a staging directory whose lock was released was not removed")
	}
}

// Where the filesystem cannot lock a directory, liveness falls back to the
// name: the pid and its start time.
func TestLivenessWithoutLocksUsesTheProcessStartTime(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	self := os.Getpid()
	mk := func(pid int, start, suffix string) string {
		dir := filepath.Join(d, fmt.Sprintf("%sh%sp%ds%s-%s", Prefix(out), hostTag(), pid, start, suffix))
		if err := os.MkdirAll(filepath.Join(dir, newName), 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dirs := map[string]bool{ // → kept
		mk(1<<22, "12345", "0011"):        false, // no such process
		mk(self, "1", "0022"):             false, // pid reused: start time differs
		mk(self, startTime(self), "0033"): true,
		mk(self, "0", "0044"):             true, // start time unknown: the pid alone
	}
	noLocks := func(*dirfd.Dir) (bool, error) { return false, dirfd.ErrLockUnsupported }
	if _, err := stageOnce(t, out, tree(out, "one"), false, Options{tryLock: noLocks}); err != nil {
		t.Fatal(err)
	}
	for dir, keep := range dirs {
		_, err := os.Lstat(dir)
		if exists := err == nil; exists != keep {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(dir), exists, keep)
		}
	}
}

// While a prepare runs its staging directory is locked: another prepare
// of the same output sees it as live.
func TestStagingIsLockedWhileItRuns(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	target, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	s, err := target.Stage(Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := dirfd.Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(); ok || err != nil {
		t.Errorf("a running staging directory could be locked by another: %v %v", ok, err)
	}
	other.Close()
	// A concurrent prepare of the same output leaves it alone.
	if _, err := stageOnce(t, out, tree(out, "other"), false, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.path); err != nil {
		t.Fatalf("a concurrent prepare removed a live staging directory: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.path); !os.IsNotExist(err) {
		t.Error("Close left the staging directory")
	}
}

// A staging directory that cannot be removed is named in the error Close
// returns (prepare turns it into a warning or appends it to its error).
func TestUnremovableStagingIsReported(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	failing := func(*dirfd.Dir, string, *dirfd.FileID) error { return unix.EPERM }
	warnings, err := stageOnce(t, out, tree(out, "one"), false, Options{remove: failing})
	if err != nil {
		t.Fatal(err)
	}
	s := stagings(t, out)
	if len(s) != 1 || !strings.Contains(strings.Join(warnings, "\n"), s[0]) {
		t.Errorf("warnings %q do not name the staging directory left (%v)", warnings, s)
	}
}

// Should the output be swapped for another directory in the instant
// between the last check and the exchange, what comes out is not deleted:
// it is left in the staging directory, marked, and named.
func TestUnexpectedDirectorySwappedOutIsKept(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	mustStage(t, out, "one")
	victim := filepath.Join(d, "victim")
	if err := os.MkdirAll(filepath.Join(victim, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "data", "thesis.tex"), []byte("years of work"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := digest(t, victim)
	race := func(from *dirfd.Dir, fromName string, to *dirfd.Dir, toName string, flags uint) error {
		if flags&unix.RENAME_EXCHANGE != 0 {
			// Another process swaps the victim in at the output.
			if err := os.Rename(out, filepath.Join(d, "ws-moved")); err != nil {
				return err
			}
			if err := os.Rename(victim, out); err != nil {
				return err
			}
		}
		return dirfd.Rename(from, fromName, to, toName, flags)
	}
	warnings, err := stageOnce(t, out, tree(out, "two"), false, Options{rename: race})
	if err != nil {
		t.Fatal(err)
	}
	s := stagings(t, out)
	if len(s) != 1 {
		t.Fatalf("staging directories %v", s)
	}
	if digest(t, filepath.Join(s[0], newName)) != before {
		t.Fatal("the directory swapped in was changed or deleted")
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "not the workspace prepare checked") {
		t.Errorf("warnings %q", warnings)
	}
	// And no later prepare deletes it.
	if _, err := stageOnce(t, out, tree(out, "three"), false, Options{}); err != nil {
		t.Fatal(err)
	}
	if digest(t, filepath.Join(s[0], newName)) != before {
		t.Fatal("a later prepare deleted the directory that was swapped in")
	}
}

// A file to copy that became a named pipe or a device after the scan
// fails the fill at once with an error naming it (a blocking open would
// hang beyond SIGINT), and nothing is installed.
func TestFillRefusesSourcesSwappedAfterTheScan(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	src := filepath.Join(d, "kit-file")
	replace := func(make func() error) func() error {
		return func() error {
			if err := os.Remove(src); err != nil {
				return err
			}
			return make()
		}
	}
	for name, swap := range map[string]func() error{
		"fifo":         replace(func() error { return unix.Mkfifo(src, 0o644) }),
		"char device":  replace(func() error { return unix.Mknod(src, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))) }),
		"block device": replace(func() error { return unix.Mknod(src, unix.S_IFBLK|0o644, int(unix.Mkdev(7, 0))) }),
		"socket":       replace(func() error { return unix.Mknod(src, unix.S_IFSOCK|0o644, 0) }),
		"symlink":      replace(func() error { return os.Symlink("/etc/passwd", src) }),
		"directory":    replace(func() error { return os.Mkdir(src, 0o755) }),
		"another file": func() error {
			// Written beside, then renamed over: another inode, same size.
			if err := os.WriteFile(src+".new", []byte("kit content"), 0o644); err != nil {
				return err
			}
			return os.Rename(src+".new", src)
		},
		"gone": func() error { return os.Remove(src) },
		"grown": func() error {
			f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(", longer now")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(d, strings.ReplaceAll(name, " ", "-"))
			os.RemoveAll(src)
			if err := os.WriteFile(src, []byte("kit content"), 0o644); err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Stat(src, &st); err != nil {
				t.Fatal(err)
			}
			files := append(tree(out, "one"), &File{Path: "transfer/kit-file", Mode: 0o644, Source: src, Expect: dirfd.ExpectOf(&st)})
			if err := swap(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := stageOnce(t, out, files, false, Options{})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the fill hangs on a swapped source")
			}
			var nr *dirfd.NotRegularError
			var ch *dirfd.ChangedError
			if err == nil || !(errors.As(err, &nr) || errors.As(err, &ch) || errors.Is(err, dirfd.ErrSymlink) || errors.Is(err, unix.ENOENT)) {
				t.Fatalf("error %v (%T)", err, err)
			}
			if !strings.Contains(err.Error(), src) {
				t.Errorf("error %q does not name %s", err, src)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Error("a failed fill installed the output")
			}
			if s := stagings(t, out); len(s) > 0 {
				t.Errorf("staging left: %v", s)
			}
		})
	}
	// The scanned file itself copies fine, with its mode and time.
	os.RemoveAll(src)
	if err := os.WriteFile(src, []byte("kit content"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1234567890, 123456789)
	files := append(tree(out, "one"), &File{Path: "transfer/kit-file", Mode: 0o640, Source: src, Expect: dirfd.ExpectOf(&st), ModTime: mtime})
	if _, err := stageOnce(t, out, files, false, Options{}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(out, "transfer", "kit-file"))
	if err != nil || !info.ModTime().Equal(mtime) || info.Mode().Perm() != 0o640 {
		t.Errorf("copy: %v %v", info, err)
	}
}

// A cancelled context stops the fill; nothing is installed and nothing
// is left, not even the parents Stage created.
func TestCancelledFillLeavesNothing(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "new", "ws")
	target, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	s, err := target.Stage(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Fill(ctx, tree(out, "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("fill: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(d, "new")); !os.IsNotExist(err) {
		t.Errorf("the parents Stage created were left: %v", err)
	}
}

// stageUntilInstall opens, checks, stages, fills and syncs a new tree for
// out, and returns the staging ready to install.
func stageUntilInstall(t *testing.T, out, tag string) (*Target, *Staging) {
	t.Helper()
	target, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	if err := target.CheckReplace(false); err != nil {
		t.Fatal(err)
	}
	s, err := target.Stage(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Fill(context.Background(), tree(out, tag)); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	return target, s
}

// TestInstallRefusesAnOutputSwappedAfterItsCheck (issue 25 item 15: a
// mutant without this check went unnoticed): the output is checked to be
// the directory Open opened (device and inode) right before the
// exchange; a directory swapped in there meanwhile is neither replaced
// nor moved.
func TestInstallRefusesAnOutputSwappedAfterItsCheck(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	mustStage(t, out, "one")
	_, s := stageUntilInstall(t, out, "two")
	if err := os.Rename(out, filepath.Join(d, "ws-moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "data", "thesis.tex"), []byte("years of work"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := digest(t, out)
	err := s.Install()
	if !errors.Is(err, dirfd.ErrChanged) {
		t.Fatalf("Install over a swapped output: %v, want ErrChanged", err)
	}
	if digest(t, out) != victim {
		t.Fatal("the directory swapped in at the output was replaced")
	}
	if readTag(t, filepath.Join(d, "ws-moved")) != "one" {
		t.Fatal("the old workspace changed")
	}
}

// TestInstallRefusesAStagedTreeSwappedAfterTheFill (issue 25 item 15):
// the staged tree is checked to be the one Stage made (device and inode)
// before it is moved into place; another directory put there is never
// installed.
func TestInstallRefusesAStagedTreeSwappedAfterTheFill(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	mustStage(t, out, "one")
	_, s := stageUntilInstall(t, out, "two")
	staged := filepath.Join(s.path, newName)
	if err := os.Rename(staged, filepath.Join(d, "staged-moved")); err != nil {
		t.Fatal(err)
	}
	for _, f := range tree(out, "planted") {
		p := filepath.Join(staged, filepath.FromSlash(f.Path))
		if f.Dir {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Install()
	if !errors.Is(err, dirfd.ErrChanged) {
		t.Fatalf("Install of a swapped staged tree: %v, want ErrChanged", err)
	}
	if got := readTag(t, out); got != "one" {
		t.Fatalf("the output holds %q, want the old workspace", got)
	}
}

// A source whose scan saw 0 bytes is copied as an empty file, whatever it
// holds when it is read (issue 25 item 2's review, L1): a limit of 0 meant
// "until EOF", so a file that was empty when scanned and grew afterwards,
// or a /proc file (which reports size 0), was copied whole.
func TestFillCopiesNothingOfASourceScannedEmpty(t *testing.T) {
	d := tempDir(t)
	out := filepath.Join(d, "ws")
	const src = "/proc/self/status" // size 0 on stat, a page of text on read
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 0 {
		t.Skipf("%s reports %d bytes here", src, st.Size)
	}
	files := append(tree(out, "one"), &File{Path: "transfer/status", Mode: 0o644, Source: src, Expect: dirfd.ExpectOf(&st)})
	if _, err := stageOnce(t, out, files, false, Options{}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(out, "transfer", "status")); err != nil || len(data) != 0 {
		t.Errorf("copied %d bytes of a source scanned empty (%v): %.60q", len(data), err, data)
	}
}
