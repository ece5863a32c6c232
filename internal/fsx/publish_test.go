package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// withoutRenameNoReplace is the system's publisher with
// renameat2(RENAME_NOREPLACE) failing with EINVAL, as it does on NFS and
// on older Lustre clients, so that the link(2) fallback runs.
func withoutRenameNoReplace() publisher {
	p := system()
	p.renameNoReplace = func(string, string) error { return unix.EINVAL }
	return p
}

func publishModes(t *testing.T, f func(t *testing.T, pub publisher)) {
	t.Run("renameat2", func(t *testing.T) {
		t.Parallel()
		f(t, system())
	})
	t.Run("link fallback", func(t *testing.T) {
		t.Parallel()
		f(t, withoutRenameNoReplace())
	})
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteNoReplacePublishesCompleteFile(t *testing.T) {
	t.Parallel()
	publishModes(t, func(t *testing.T, pub publisher) {
		dir := t.TempDir()
		p := filepath.Join(dir, "handle.json")
		if err := pub.writeNoReplace(p, []byte("{\"a\":1}\n"), 0o600, true); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "{\"a\":1}\n" {
			t.Fatalf("content %q, %v", b, err)
		}
		st, _ := os.Lstat(p)
		if st.Mode() != 0o600 {
			t.Fatalf("mode %v, want -rw-------", st.Mode())
		}
		// The temp name is gone: only the published file remains, with one link.
		if names := entries(t, dir); len(names) != 1 || names[0] != "handle.json" {
			t.Fatalf("dir holds %v", names)
		}
		if n := st.Sys().(*syscall.Stat_t).Nlink; n != 1 {
			t.Fatalf("nlink %d, want 1", n)
		}
	})
}

func TestWriteNoReplaceNeverReplaces(t *testing.T) {
	t.Parallel()
	publishModes(t, func(t *testing.T, pub publisher) {
		dir := t.TempDir()
		p := filepath.Join(dir, "handle.json")
		if err := os.WriteFile(p, []byte("first"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := pub.writeNoReplace(p, []byte("second"), 0o600, false)
		if !errors.Is(err, os.ErrExist) {
			t.Fatalf("want ErrExist, got %v", err)
		}
		if b, _ := os.ReadFile(p); string(b) != "first" {
			t.Fatalf("existing file replaced: %q", b)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Fatalf("temp file left after a refused publish: %v", names)
		}
		// A symlink (even dangling) or a directory holding the name is
		// never replaced either.
		link := filepath.Join(dir, "link")
		if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
			t.Fatal(err)
		}
		if err := pub.writeNoReplace(link, []byte("x"), 0o600, false); !errors.Is(err, os.ErrExist) {
			t.Fatalf("publish over a symlink: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "target")); !os.IsNotExist(err) {
			t.Fatal("symlink target created")
		}
		sub := filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := pub.writeNoReplace(sub, []byte("x"), 0o600, false); !errors.Is(err, os.ErrExist) {
			t.Fatalf("publish over a directory: %v", err)
		}
		if names := entries(t, dir); len(names) != 3 {
			t.Fatalf("dir holds %v", names)
		}
	})
}

// Concurrent writers of one name: exactly one wins, its content is whole,
// and no temp file is left.
func TestWriteNoReplaceConcurrentWriters(t *testing.T) {
	t.Parallel()
	publishModes(t, func(t *testing.T, pub publisher) {
		dir := t.TempDir()
		p := filepath.Join(dir, "handle.json")
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = pub.writeNoReplace(p, []byte(strings.Repeat(string(rune('a'+i)), 4096)), 0o600, false)
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("writers %d and %d both published", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, os.ErrExist):
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no writer published")
		}
		b, _ := os.ReadFile(p)
		if string(b) != strings.Repeat(string(rune('a'+won)), 4096) {
			t.Fatalf("published content is not the winner's (%d bytes)", len(b))
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Fatalf("dir holds %v", names)
		}
	})
}

// A crash between writing the temp file and publishing it leaves the
// complete temp file and no file under the final name.
func TestCrashBeforePublishLeavesNoPartialFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "handle.json")
	tmp, err := WriteTemp(p, []byte("whole"), 0o600, true)
	if err != nil {
		t.Fatal(err)
	}
	// (crash here)
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("final name exists before publish: %v", err)
	}
	if filepath.Dir(tmp) != dir || !IsTempOf(filepath.Base(tmp), "handle.json") || IsTempOf("handle.json", "handle.json") {
		t.Fatalf("temp %s is not a recognisable temp of handle.json in %s", tmp, dir)
	}
	if b, _ := os.ReadFile(tmp); string(b) != "whole" {
		t.Fatalf("temp content %q", b)
	}
	// A leftover temp never blocks a later write.
	if err := WriteNoReplace(p, []byte("again"), 0o600, false); err != nil {
		t.Fatal(err)
	}
	if err := Publish(tmp, p); !errors.Is(err, os.ErrExist) {
		t.Fatalf("late publish of the leftover: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "again" {
		t.Fatalf("content %q", b)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Fatal("a refused publish left its temp file")
	}
}

func TestIsTempOf(t *testing.T) {
	for name, want := range map[string]bool{
		".handle.json.tmp-0123456789abcdef": true,
		".handle.json.tmp-":                 false,
		"handle.json":                       false,
		".handle.json.tmp-zz23456789abcdef": false,
		".timers.json.tmp-0123456789abcdef": false,
		"handle.json.tmp-0123456789abcdef":  false,
	} {
		if got := IsTempOf(name, "handle.json"); got != want {
			t.Errorf("IsTempOf(%q) = %v, want %v", name, got, want)
		}
	}
}

// NFS may answer a retransmitted LINK with EEXIST although the first one
// linked the file: the fallback checks the result instead of the answer.
func TestLinkFallbackRetransmittedLink(t *testing.T) {
	t.Parallel()
	nfs := withoutRenameNoReplace()
	dir := t.TempDir()
	p := filepath.Join(dir, "handle.json")
	nfs.link = func(from, to string) error {
		if err := unix.Link(from, to); err != nil {
			return err
		}
		return unix.EEXIST // the reply to the retransmission
	}
	if err := nfs.writeNoReplace(p, []byte("mine"), 0o600, false); err != nil {
		t.Fatalf("a link that succeeded was taken for a failure: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "mine" {
		t.Fatalf("content %q", b)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("dir holds %v", names)
	}
	// A real EEXIST (another file holds the name) stays an error.
	nfs.link = unix.Link
	if err := nfs.writeNoReplace(p, []byte("other"), 0o600, false); !errors.Is(err, os.ErrExist) {
		t.Fatalf("want ErrExist, got %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "mine" {
		t.Fatalf("content %q", b)
	}
}
