package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makeVar returns the default of a `NAME ?= value` line of the Makefile.
func makeVar(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("Makefile has no %s ?= line", name)
	}
	return strings.TrimSpace(m[1])
}

// TestMakeGolden: make golden runs exactly the golden tests of
// GOLDEN_PKGS (every test in a golden_test.go file, nothing else), so a
// template edit cannot make it fail on another test's expectation.
func TestMakeGolden(t *testing.T) {
	root := repoRoot()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(mk)
	run := regexp.MustCompile(makeVar(t, makefile, "GOLDEN_RUN"))
	if !strings.Contains(makefile, "-run '$(GOLDEN_RUN)' -update") {
		t.Fatal("make golden does not run -run '$(GOLDEN_RUN)' -update")
	}
	pkgs := makeVar(t, makefile, "GOLDEN_PKGS")
	dir := filepath.Join(root, strings.TrimSuffix(strings.TrimPrefix(pkgs, "./"), "/..."))
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	golden, other := 0, 0
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		isGolden := filepath.Base(p) == "golden_test.go"
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			switch name := m[1]; {
			case isGolden && !run.MatchString(name):
				t.Errorf("%s: %s is a golden test that make golden does not run", p, name)
			case !isGolden && run.MatchString(name):
				t.Errorf("%s: make golden also runs %s, which is not a golden test", p, name)
			case isGolden:
				golden++
			default:
				other++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if golden < 2 || other < 10 {
		t.Errorf("found %d golden and %d other tests under %s: is GOLDEN_PKGS right?", golden, other, pkgs)
	}
}
