package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeDemo runs make demo (no Slurm cluster: it only prepares the
// example kit) with BIN the binary madeBinary made (make demo's own make
// build finds it up to date), and
// requires the workspace it prints to still exist afterwards: at DEMO_DIR
// when given (twice: a second run re-prepares it), else in the temp
// directory the last line names.
func TestMakeDemo(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make demo needs make: %v", err)
	}
	root := repoRoot()
	bin := madeBinary(t) // make demo runs make build: up to date, no new link
	kept := regexp.MustCompile(`(?m)^--- make demo: the workspace is kept in (\S+) \(remove it with: rm -rf '([^']+)'\)$`)
	check := func(out, wantDir string) {
		t.Helper()
		m := kept.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("make demo did not say where the workspace is:\n%s", out)
		}
		if wantDir != "" && m[2] != wantDir {
			t.Errorf("make demo kept %s, want DEMO_DIR %s", m[2], wantDir)
		}
		if m[1] != filepath.Join(m[2], "site-1") {
			t.Errorf("workspace %s is not in the directory to remove %s", m[1], m[2])
		}
		if !strings.Contains(out, "--- workspace "+m[1]+":") {
			t.Errorf("make demo printed another workspace than the one it names as kept:\n%s", out)
		}
		for _, f := range []string{"startup/start_slurm.sh", "startup/parent.slurm", "local/resources.json.default"} {
			if _, err := os.Stat(filepath.Join(m[1], f)); err != nil {
				t.Errorf("the workspace make demo printed is gone: %v", err)
			}
		}
	}
	demoDir := filepath.Join(t.TempDir(), "demo")
	for range 2 {
		check(run(t, root, nil, "make", "--no-print-directory", "demo", "BIN="+bin, "DEMO_DIR="+demoDir), demoDir)
	}
	tmp := t.TempDir()
	check(run(t, root, []string{"TMPDIR=" + tmp}, "make", "--no-print-directory", "demo", "BIN="+bin), "")
	if ents, _ := filepath.Glob(filepath.Join(tmp, "flare-slurm-demo.*", "site-1")); len(ents) != 1 {
		t.Errorf("make demo without DEMO_DIR kept %d workspaces under TMPDIR, want 1", len(ents))
	}
}
