package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestReadmeQuickStart runs every flare-slurm line of the README's first
// shell block, in order, from the repository root against the examples,
// with /tmp/ paths moved into the test's temp directory: each must exit 0.
func TestReadmeQuickStart(t *testing.T) {
	root := repoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```shell\n")
	if !ok {
		t.Fatal("README.md has no shell block")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md: the first shell block is not closed")
	}
	tmp := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chdir(wd) }()
	// prepare tunes the collector for its short process; restore it.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		cmd, _, _ := strings.Cut(line, " #")
		args := strings.Fields(cmd)
		if len(args) == 0 || args[0] != "flare-slurm" {
			continue
		}
		if strings.ContainsAny(cmd, `'"$\*?`) {
			t.Fatalf("README line %q: this test splits on spaces only", line)
		}
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "/tmp/", tmp+"/")
			// a request names its workspace's paths: move them too
			if i > 0 && args[i-1] == "--request" && a != "-" {
				data, err := os.ReadFile(a)
				if err != nil {
					t.Fatal(err)
				}
				moved := filepath.Join(tmp, "request-"+filepath.Base(a))
				if err := os.WriteFile(moved, bytes.ReplaceAll(data, []byte("/tmp/"), []byte(tmp+"/")), 0o600); err != nil {
					t.Fatal(err)
				}
				args[i] = moved
			}
		}
		var stdout, stderr bytes.Buffer
		if code := Main(args[1:], strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Errorf("README line %q exited %d:\n%s%s", strings.TrimSpace(line), code, stdout.String(), stderr.String())
		}
		ran++
	}
	if ran < 4 {
		t.Errorf("ran %d flare-slurm lines of the README's first shell block, want validate, prepare, render and the drift check", ran)
	}
}
