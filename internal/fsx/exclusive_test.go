package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteExclusiveRefusesExistingAndSymlinks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteExclusive(p, []byte("one"), 0o600, true); err != nil {
		t.Fatal(err)
	}
	if err := WriteExclusive(p, []byte("two"), 0o600, false); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second create: want ErrExist, got %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("existing file was changed: %q", b)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteExclusive(link, []byte("x"), 0o600, false); err == nil {
		t.Fatal("create through a dangling symlink succeeded")
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatal("symlink target was created")
	}
}

func TestWriteExclusiveModeIsExact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := WriteExclusive(p, nil, 0o700, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v, want 0700", st.Mode().Perm())
	}
}
