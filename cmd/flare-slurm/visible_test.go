package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 9 item 13: a file name with a newline and a terminal escape is
// shown Go-quoted in problem lines and the error line: one problem is one
// line and no escape reaches the terminal.
func TestProblemLinesQuoteNamesThatAreNotPrintable(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "bad\x1b]0;pwned\x07\nname.yaml")
	if err := os.WriteFile(name, []byte("runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: python3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"validate", "--kind", "slurm-config", name}, strings.NewReader(""), &stdout, &stderr)
	if code == 0 {
		t.Fatalf("validate passed a bad config:\n%s", stderr.String())
	}
	got := stderr.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("stderr carries raw control characters: %q", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want one problem line, the error line and the hint, got %d lines: %q", len(lines), got)
	}
	want := `"` + dir + `/bad\x1b]0;pwned\a\nname.yaml":4:16: job_launcher.python_path: must be an absolute path (got "python3")`
	if lines[0] != want {
		t.Errorf("problem line\n got %s\nwant %s", lines[0], want)
	}
}
