package swap

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func tree(t *testing.T, dir, marker string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(marker), 0o600); err != nil {
		t.Fatal(err)
	}
}

func marker(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "marker"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallNew(t *testing.T) {
	d := t.TempDir()
	staged, target := filepath.Join(d, "stage"), filepath.Join(d, "out")
	tree(t, staged, "new")
	old, swapped, err := Install(staged, target, filepath.Join(d, "aside"))
	if err != nil || old != "" || !swapped {
		t.Fatalf("Install = %q, %v", old, err)
	}
	if marker(t, target) != "new" {
		t.Fatal("target is not the new tree")
	}
	if _, err := os.Lstat(staged); !os.IsNotExist(err) {
		t.Fatalf("staged still exists: %v", err)
	}
}

func TestInstallExchanges(t *testing.T) {
	d := t.TempDir()
	staged, target := filepath.Join(d, "stage"), filepath.Join(d, "out")
	tree(t, staged, "new")
	tree(t, target, "old")
	old, swapped, err := Install(staged, target, filepath.Join(d, "aside"))
	if err != nil || !swapped {
		t.Fatal(err)
	}
	if old != staged || marker(t, target) != "new" || marker(t, old) != "old" {
		t.Fatalf("old=%q target=%q", old, marker(t, target))
	}
}

func TestInstallFallbackWithoutExchange(t *testing.T) {
	calls := 0
	renameat2 = func(int, string, int, string, uint) error { calls++; return unix.EINVAL }
	defer func() { renameat2 = unix.Renameat2 }()
	d := t.TempDir()
	staged, target, aside := filepath.Join(d, "stage"), filepath.Join(d, "out"), filepath.Join(d, "aside")
	tree(t, staged, "new")
	tree(t, target, "old")
	old, swapped, err := Install(staged, target, aside)
	if err != nil || !swapped {
		t.Fatal(err)
	}
	if calls != 1 || old != aside || marker(t, target) != "new" || marker(t, aside) != "old" {
		t.Fatalf("calls=%d old=%q", calls, old)
	}
}

func TestInstallFallbackRestoresOnFailure(t *testing.T) {
	renameat2 = func(int, string, int, string, uint) error { return unix.EINVAL }
	defer func() { renameat2 = unix.Renameat2 }()
	d := t.TempDir()
	target, aside := filepath.Join(d, "out"), filepath.Join(d, "aside")
	tree(t, target, "old")
	// The staged tree does not exist: the second rename fails.
	if _, swapped, err := Install(filepath.Join(d, "missing"), target, aside); err == nil || swapped {
		t.Fatal("Install succeeded without a staged tree")
	}
	if marker(t, target) != "old" {
		t.Fatal("target was not restored")
	}
}

func TestInstallDoesNotReplaceOtherErrors(t *testing.T) {
	d := t.TempDir()
	target := filepath.Join(d, "out")
	tree(t, target, "old")
	if _, swapped, err := Install(filepath.Join(d, "missing"), target, filepath.Join(d, "aside")); err == nil || swapped {
		t.Fatal("exchange with a missing staged tree succeeded")
	}
	if marker(t, target) != "old" {
		t.Fatal("target changed")
	}
	if _, err := os.Lstat(filepath.Join(d, "aside")); !os.IsNotExist(err) {
		t.Fatal("fallback ran on an error that is not 'unsupported'")
	}
}
