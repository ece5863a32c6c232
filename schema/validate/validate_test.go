package validate

import (
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// TestHintByKindNotMessage: the hint of a failed validate comes from the
// problems' Kind; a message that reads like another kind's changes nothing.
func TestHintByKindNotMessage(t *testing.T) {
	h := func(ps ...problem.Problem) string { return hint(ps, nil) }
	if got := h(problem.Problem{Kind: problem.Rule, File: "f", Message: "cannot read file: x"}); got != "" {
		t.Errorf("a rule problem that reads like a read failure got the read hint %q", got)
	}
	if got := h(problem.Problem{Kind: problem.Read, File: "f", Message: "x"}); got != "check that the path exists and is readable" {
		t.Errorf("read hint: %q", got)
	}
	if got := h(problem.Problem{Kind: problem.Schema, File: "f", Message: "not valid YAML: x"}); got != "" {
		t.Errorf("a schema problem that reads like a syntax error got the syntax hint %q", got)
	}
	if got := h(problem.Problem{Kind: problem.Syntax, File: "f", Message: "x"}); got != "fix the syntax at the position shown" {
		t.Errorf("syntax hint: %q", got)
	}
}

// TestRunResult: Run returns one Path per PATH, in order, with the kind it
// was checked as ("" for one it could not check), and the problems once,
// with the hint; it writes nothing.
func TestRunResult(t *testing.T) {
	res := Run([]string{"../../examples/study_runtime.yaml", "-", "../../examples/meta.json"},
		Options{Stdin: strings.NewReader("just text\n"), Offline: true})
	var got []string
	for _, p := range res.Paths {
		got = append(got, p.Name+" "+p.Kind)
	}
	want := []string{"../../examples/study_runtime.yaml study-runtime", StdinName + " ", "../../examples/meta.json job-meta"}
	if !slices.Equal(got, want) {
		t.Fatalf("paths %q, want %q", got, want)
	}
	if res.Paths[0].Problems != nil || res.Paths[2].Problems != nil || res.Paths[1].Problems == nil {
		t.Errorf("problems by path: %v / %v / %v", res.Paths[0].Problems, res.Paths[1].Problems, res.Paths[2].Problems)
	}
	if len(res.Problems) != len(res.Paths[1].Problems) || res.BadFiles != 1 || res.Paths[1].Checked() {
		t.Errorf("result: %d problems in %d files: %v", len(res.Problems), res.BadFiles, res.Problems)
	}
}
