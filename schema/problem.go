package schema

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/visible"
)

// Problem is one thing wrong with one input file. Every check, schema or Go,
// reports in this shape so that a user sees all problems at once. In JSON
// every field is always present (0 or "" when unknown), so pipelines can
// read them without checking for absent keys.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`   // 1-based; 0 when the problem has no position
	Column  int    `json:"column"` // 1-based; 0 when unknown
	Path    string `json:"path"`   // dotted field path, e.g. "job_launcher.sbatch_directives.partition"; "" for the whole file
	Message string `json:"message"`
	Hint    string `json:"hint"` // what to do; "" when there is nothing to add
	// Code is a warning's code (WarningCodes); "" for a problem.
	Code string `json:"code,omitempty"`
}

// String renders "file:line:column: path: message (hint)", leaving out the
// parts that are unknown. A part holding a character that is not printable
// (a newline, an escape) is shown in Go's %q form: one problem is one line.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(visible.Quote(p.File))
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, max(p.Column, 1))
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(visible.Quote(p.Path))
		b.WriteString(": ")
	}
	b.WriteString(visible.Quote(p.Message))
	if p.Hint != "" {
		fmt.Fprintf(&b, " (%s)", visible.Quote(p.Hint))
	}
	return b.String()
}

// Problems is every problem found in one or more files. A non-empty
// Problems is an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Sort orders problems by file, line, column, path and message.
func (ps Problems) Sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Message < b.Message
	})
}
