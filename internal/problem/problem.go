// Package problem holds Problem, one thing wrong with one input file, and
// its Kind. Every check (schema, generator, command) reports in this shape,
// and every decision about a problem (the SARIF rule of a CI report, the
// hint of a failed validate, where a problem points in a launch request) is
// made from its typed fields, never from its message: a message is for
// people and may change wording at any time.
package problem

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/visible"
)

// Kind is the class of a problem, set where the problem is made.
type Kind string

// The kinds. Each is about what went wrong, not about which package found
// it; docs/conventions.md lists them.
const (
	// Read: a file, startup kit or workspace could not be opened or read
	// (missing, permission denied, an I/O error).
	Read Kind = "read"
	// Syntax: the text is not valid YAML or JSON.
	Syntax Kind = "syntax"
	// Structure: the text parses, but its YAML shape is refused before any
	// key is looked at: an empty file, a top level that is not a mapping,
	// aliases, merge keys, keys that are not plain strings, duplicate keys,
	// tags.
	Structure Kind = "structure"
	// Schema: a key or a value that the file's schema does not allow: an
	// unknown or missing key, a wrong type, a value out of range or not
	// one of the allowed ones (checked by the JSON Schema or in Go).
	Schema Kind = "schema"
	// Rule: a rule that holds across keys, files or the host, which no
	// schema of one value can express (two keys that conflict, an image
	// that does not exist, a request that does not fit its workspace).
	Rule Kind = "rule"
	// Layout: a file system entry is not what belongs there: a directory
	// where a file belongs, a missing or unexpected kit entry, a symlink,
	// a file too large to be an input.
	Layout Kind = "layout"
	// Drift: a prepared workspace differs from what prepare would
	// produce from its kit and config (prepare --check).
	Drift Kind = "drift"
)

// Kinds lists every kind, in the order docs/conventions.md lists them.
var Kinds = []Kind{Read, Syntax, Structure, Schema, Rule, Layout, Drift}

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
	// Code is a warning's code (schema.WarningCodes); "" for a problem.
	Code string `json:"code,omitempty"`
	// Kind is the problem's class, set where it is made.
	Kind Kind `json:"-"`
	// AtKey says the problem is about the key at Path itself (an unknown
	// key), not about its value: a reader that places the problem in
	// another text points at the key.
	AtKey bool `json:"-"`
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
