package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/flare-slurm/flare-slurm/internal/clidoc"
)

// TestCLIReferenceIsCurrent fails when docs/cli differs from what the
// command tree renders: a flag, a help text or a command changed without
// 'make docs'.
func TestCLIReferenceIsCurrent(t *testing.T) {
	pages, err := clidoc.Markdown(testRoot())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repoRoot(), "docs", "cli")
	var problems []string
	want := map[string]bool{}
	for _, p := range pages {
		want[p.Name] = true
		got, err := os.ReadFile(filepath.Join(dir, p.Name))
		if err != nil {
			problems = append(problems, "missing docs/cli/"+p.Name)
			continue
		}
		if !bytes.Equal(got, p.Data) {
			diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: difflib.SplitLines(string(got)), B: difflib.SplitLines(string(p.Data)),
				FromFile: "docs/cli/" + p.Name + " (committed)", ToFile: "generated", Context: 2,
			})
			problems = append(problems, "docs/cli/"+p.Name+" differs:\n"+diff)
		}
	}
	committed, _ := filepath.Glob(filepath.Join(dir, "flare-slurm*.md"))
	for _, path := range committed {
		if !want[filepath.Base(path)] {
			problems = append(problems, "docs/cli/"+filepath.Base(path)+" documents no command of the tree")
		}
	}
	if len(problems) > 0 {
		t.Errorf("docs/cli is out of date with the command tree; run 'make docs' and commit the result:\n%s", strings.Join(problems, "\n"))
	}
}

// TestManPages: one page per documented command, named as man(1) finds
// it, with the given source and date, the command's flags, and the same
// bytes on every render.
func TestManPages(t *testing.T) {
	date := time.Date(2026, 12, 3, 8, 39, 4, 0, time.UTC)
	render := func() []clidoc.Page {
		pages, err := clidoc.Man(testRoot(), "flare-slurm v1.2.3", date)
		if err != nil {
			t.Fatal(err)
		}
		return pages
	}
	pages := render()
	var names []string
	byName := map[string][]byte{}
	for _, p := range pages {
		names = append(names, p.Name)
		byName[p.Name] = p.Data
	}
	root := testRoot()
	var want []string
	want = append(want, "flare-slurm.1")
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			want = append(want, "flare-slurm-"+c.Name()+".1")
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("man pages %q, want %q", names, want)
	}
	validate := string(byName["flare-slurm-validate.1"])
	for _, s := range []string{
		`.TH "FLARE-SLURM-VALIDATE" "1" "Dec 2026" "flare-slurm v1.2.3" "flare-slurm manual"`,
		"flare-slurm-validate - Check config files and startup kits",
		`\fB--kind\fP="`, `\fB--site\fP="`, `\fB--json\fP`,
		`\fBflare-slurm(1)\fP`,
	} {
		if !strings.Contains(validate, s) {
			t.Errorf("flare-slurm-validate.1 lacks %q:\n%s", s, validate)
		}
	}
	for i, p := range render() {
		if !bytes.Equal(p.Data, pages[i].Data) {
			t.Errorf("%s differs between two renders", p.Name)
		}
	}
}
