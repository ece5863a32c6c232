package validate

import (
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
