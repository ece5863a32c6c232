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
		dirLink:  "symlink (to \"" + f.dir + "\"); a kit holds no symlinks",
		dangling: "symlink (to \"" + filepath.Join(f.dir, "missing") + "\"); a kit holds no symlinks",
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

// TestKitSizeLimitsRefusedBeforeCopying (issue 25 item 1): a 60 KB kit
// whose sparse file reads as 51 GB made prepare write 51 GB. The scan
// refuses it, naming the file and the limit, and nothing is written.
func TestKitSizeLimitsRefusedBeforeCopying(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	huge := filepath.Join(f.kit, "transfer", "huge.bin")
	if err := os.MkdirAll(filepath.Dir(huge), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 51<<30); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.dir, "ws")
	_, err := Run(context.Background(), f.opts(out))
	pe := wantCode(t, err, errcode.InvalidKit)
	if !strings.Contains(pe.Problems.Error(), huge+": is 54760833024 bytes; prepare copies files of at most 536870912 bytes (512 MiB)") {
		t.Errorf("problems %s", pe.Problems.Error())
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("prepare wrote %s: %v", out, err)
	}
	if s := siblings(t, f.dir, stagingPrefix(out)); len(s) > 0 {
		t.Errorf("staging directories left: %v", s)
	}
}
