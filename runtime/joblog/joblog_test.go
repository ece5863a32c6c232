package joblog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

func runDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "job-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestOpenRefuses: the output is never read through a symlink (the file or
// the run directory), nor when another account owns it.
func TestOpenRefuses(t *testing.T) {
	root := runDir(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root, "job-1", "7", os.Getuid()); !errors.Is(err, ErrNotYet) {
		t.Errorf("missing file: %v, want ErrNotYet", err)
	}
	if _, err := Open(root, "job-2", "7", os.Getuid()); !errors.Is(err, ErrNotYet) {
		t.Errorf("missing run dir: %v, want ErrNotYet", err)
	}
	out := filepath.Join(root, "job-1", "slurm-7.out")
	if err := os.Symlink(secret, out); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root, "job-1", "7", os.Getuid()); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("symlinked file: %v", err)
	}
	// a run directory that is a symlink to a directory holding the file
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "slurm-8.out"), []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(root, "job-3")); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(root, "job-3", "8", os.Getuid()); err == nil {
		f.Close()
		t.Error("a symlinked run directory was entered")
	}
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(root, "job-1", "7", os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(root, "job-1", "7", os.Getuid()+1); err == nil || !strings.Contains(err.Error(), "not by the runtime account") {
		t.Errorf("a file of another account: %v", err)
	}
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "root (to give the output file to another account)")
	}
	if err := os.Chown(out, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root, "job-1", "7", os.Getuid()); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("a file owned by uid 65534: %v", err)
	}
}

// TestFollow waits for the file, prints what is appended, starts over
// after a truncation, and stops once the job ended, with what it wrote
// last; every wait has a deadline.
func TestFollow(t *testing.T) {
	root := runDir(t)
	out := filepath.Join(root, "job-1", "slurm-7.out")
	var ended atomic.Bool
	var buf lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, &buf, func() (*os.File, error) { return Open(root, "job-1", "7", os.Getuid()) },
			func(context.Context) bool { return ended.Load() }, 20*time.Millisecond)
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(buf.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("follow printed %q, want %q", buf.String(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(60 * time.Millisecond) // pending: no file yet
	if err := os.WriteFile(out, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor("one\n")
	appendTo(t, out, "two\n")
	waitFor("one\ntwo\n")
	if err := os.WriteFile(out, []byte("x\n"), 0o600); err != nil { // truncated and rewritten
		t.Fatal(err)
	}
	waitFor("one\ntwo\nx\n")
	appendTo(t, out, "last\n")
	ended.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("follow did not stop after the job ended")
	}
	if got := buf.String(); got != "one\ntwo\nx\nlast\n" {
		t.Errorf("followed %q", got)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
