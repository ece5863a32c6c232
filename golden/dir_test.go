package golden

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDir: every set is an absolute directory beside this file that
// holds files, and golden/ holds no directory that is not a set.
func TestDir(t *testing.T) {
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		dir := Dir(set)
		if !filepath.IsAbs(dir) || dir != filepath.Join(here, set) {
			t.Errorf("Dir(%q) = %q, want %q", set, dir, filepath.Join(here, set))
		}
		n := 0
		_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return err
		})
		if n == 0 {
			t.Errorf("golden set %s (%s) holds no files", set, dir)
		}
	}
	entries, err := os.ReadDir(here)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(sets, e.Name()) {
			t.Errorf("golden/%s is not a golden set: add it to Sets or remove it", e.Name())
		}
	}
}

// TestDirRefusesUnknownSet: a misspelt set panics naming the known
// sets instead of pointing goldie's -update at a new directory.
func TestDirRefusesUnknownSet(t *testing.T) {
	for _, set := range []string{"compiled", "", "../compile", "compile/none-client"} {
		func() {
			defer func() {
				r, _ := recover().(string)
				if !strings.Contains(r, "no golden set") || !strings.Contains(r, Compile) {
					t.Errorf("Dir(%q): panic %q, want one naming the known sets", set, r)
				}
			}()
			Dir(set)
		}()
	}
}

// TestRootWithoutCallerPath: the fallback (a -trimpath build) finds
// golden/ from a working directory anywhere inside the tree.
func TestRootWithoutCallerPath(t *testing.T) {
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(here, Compile, "none-client"))
	if got := fromWorkingDir(); got != here {
		t.Errorf("root from %s = %q, want %q", Compile, got, here)
	}
}
