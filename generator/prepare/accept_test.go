package prepare

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
)

// Findings of the acceptance pass (a user following the README).

// asUID makes prepare see uid as its effective user id for the test.
func asUID(t *testing.T, uid int) {
	t.Helper()
	currentUID = func() int { return uid }
	t.Cleanup(func() { currentUID = os.Geteuid })
}

// An output inside the kit replaces part of the kit when swapped into
// place; only KIT/prepared/... is prepare's.
func TestOutputInsideTheKitIsRefused(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	if err := os.MkdirAll(filepath.Join(f.kit, "transfer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.kit, "transfer", "keep.txt"), []byte("kit file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.kit, "prepared", "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"transfer", "startup", "local", "custom/ws", "prepared"} {
		t.Run(rel, func(t *testing.T) {
			kitBefore := digest(t, f.kit)
			out := filepath.Join(f.kit, filepath.FromSlash(rel))
			_, err := Run(context.Background(), f.opts(out))
			pe := wantCode(t, err, errcode.InvalidOutput)
			if !strings.Contains(pe.Message, out) || !strings.Contains(pe.Message, "the kit "+f.kit) {
				t.Errorf("message %q does not name the output %s and the kit %s", pe.Message, out, f.kit)
			}
			if !strings.Contains(pe.Hint, "outside the kit") || !strings.Contains(pe.Hint, "KIT/prepared/") {
				t.Errorf("hint %q", pe.Hint)
			}
			if digest(t, f.kit) != kitBefore { // also catches staging dirs and created parents
				t.Error("the kit changed")
			}
		})
	}
	// Under KIT/prepared/ is fine, and leaves the rest of prepared/ alone.
	out := filepath.Join(f.kit, "prepared", "slurm-b")
	f.run(t, out)
	if _, err := os.Stat(filepath.Join(f.kit, "prepared", "docker")); err != nil {
		t.Error("KIT/prepared/docker is gone")
	}
	if string(readFile(t, filepath.Join(f.kit, "transfer", "keep.txt"))) != "kit file" {
		t.Error("the kit's transfer/ changed")
	}
}

// Every path of the kit that prepare cannot copy is reported in one run,
// one problem each, with the kind of file in words.
func TestKitTreeProblemsAreAllReported(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	transfer := filepath.Join(f.kit, "transfer")
	if err := os.MkdirAll(transfer, 0o755); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(f.kit, "local", "dir-link")
	dangling := filepath.Join(transfer, "dangling")
	fifo := filepath.Join(transfer, "fifo")
	sock := filepath.Join(f.kit, "s")
	if err := os.Symlink(f.dir, dirLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.dir, "missing"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	out := filepath.Join(f.dir, "ws")
	_, err = Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.InvalidKit)
	want := map[string]string{
		dirLink:  "symlink to a directory",
		dangling: "dangling symlink: its target " + filepath.Join(f.dir, "missing") + " does not exist",
		fifo:     "named pipe (FIFO)",
		sock:     "socket",
	}
	if len(pe.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(pe.Problems), len(want), pe.Problems.Error())
	}
	for _, p := range pe.Problems {
		if w, ok := want[p.File]; !ok || !strings.HasPrefix(p.Message, w) {
			t.Errorf("problem %q: want one for each of %v", p.String(), want)
		}
		if p.Hint == "" {
			t.Errorf("problem %q has no hint", p.String())
		}
	}
	if strings.Contains(pe.Error(), "p---------") || strings.Contains(pe.Error(), "S---------") {
		t.Errorf("mode letters instead of words:\n%s", pe.Error())
	}
	// schema.LoadKit finds these too (so they are listed with the config's
	// problems); scanKit is checked on its own below.
	if !strings.Contains(pe.Message, f.kit) {
		t.Errorf("message %q does not name the kit", pe.Message)
	}
	assertUntouched(t, out, "absent")
	if st := siblings(t, f.dir, ".ws.prepare-"); len(st) != 0 {
		t.Errorf("left behind %v", st)
	}

	// The scan that lists the files to copy reports them all as well.
	w := &Workspace{Kit: f.kit, Output: out, index: map[string]*File{}}
	err = w.scanKit()
	pe = wantCode(t, err, errcode.InvalidKit)
	if len(pe.Problems) != len(want) {
		t.Fatalf("scanKit: got %d problems, want %d:\n%s", len(pe.Problems), len(want), pe.Problems.Error())
	}
	for _, p := range pe.Problems {
		if w, ok := want[p.File]; !ok || !strings.HasPrefix(p.Message, w) || p.Hint == "" {
			t.Errorf("scanKit problem %q: want one for each of %v", p.String(), want)
		}
	}
	if pe.Message != "the startup kit "+f.kit+" holds 4 path(s) prepare cannot copy" || pe.Hint != hintFixProblems {
		t.Errorf("scanKit message %q, hint %q", pe.Message, pe.Hint)
	}
}

// A hint must not point at "above": with --json the problems are in the
// envelope's problems array.
func TestProblemHintsDoNotSayAbove(t *testing.T) {
	f := newFixture(t, "site-1", "runtime: slurm\njob_launcher:\n  bogus: 1\n")
	_, err := Run(context.Background(), f.opts(filepath.Join(f.dir, "ws")))
	pe := wantCode(t, err, errcode.InvalidInput)
	if len(pe.Problems) == 0 || strings.Contains(pe.Hint, "above") || !strings.Contains(pe.Hint, "nothing was written") {
		t.Errorf("hint %q with %d problems", pe.Hint, len(pe.Problems))
	}
	f = newFixture(t, "site-1", bareConfig)
	if err := syscall.Mkfifo(filepath.Join(f.kit, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), f.opts(filepath.Join(f.dir, "ws")))
	if pe := wantCode(t, err, errcode.InvalidKit); strings.Contains(pe.Hint, "above") {
		t.Errorf("hint %q", pe.Hint)
	}
}

// A missing default KIT/config.yaml is named as such, with a hint at
// --config, instead of "is not a valid Slurm config".
func TestMissingDefaultConfig(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	_, err := Run(context.Background(), Options{Kit: f.kit})
	pe := wantCode(t, err, errcode.InvalidInput)
	want := "the default config " + filepath.Join(f.kit, "config.yaml") + " does not exist"
	if pe.Message != want {
		t.Errorf("message %q, want %q", pe.Message, want)
	}
	if !strings.Contains(pe.Hint, "--config FILE") {
		t.Errorf("hint %q", pe.Hint)
	}
	assertUntouched(t, filepath.Join(f.kit, "prepared"), "absent")
	// Kit problems are still reported with it.
	if err := os.Remove(filepath.Join(f.kit, "startup", "rootCA.pem")); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Options{Kit: f.kit})
	pe = wantCode(t, err, errcode.InvalidInput)
	if !strings.Contains(pe.Problems.Error(), "rootCA.pem") {
		t.Errorf("kit problems not reported: %q", pe.Problems.Error())
	}
}

// A workspace prepared as root is root's: prepare says so and what to do
// (contract §4.8 wants it owned by the runtime account).
func TestRootPrepareWarns(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	asUID(t, 0)
	res := f.run(t, out)
	var got []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "owned by root") {
			got = append(got, w)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], out) || !strings.Contains(got[0], "chown -R ACCOUNT "+out) ||
		!strings.Contains(got[0], "run prepare as that account") {
		t.Errorf("warnings %q, want one naming %s with the chown hint", res.Warnings, out)
	}
	asUID(t, 1000)
	res = f.run(t, out)
	for _, w := range res.Warnings {
		if strings.Contains(w, "root") {
			t.Errorf("warning %q for a prepare not run as root", w)
		}
	}
}
