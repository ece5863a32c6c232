// Package problem holds Problem, one thing wrong with one input file, and
// its Kind. Every check (schema, generator, command) reports in this shape,
// and every decision about a problem (the SARIF rule of a CI report, the
// hint of a failed validate, where a problem points in a launch request) is
// made from its typed fields, never from its message: a message is for
// people and may change wording at any time.
package problem

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

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
	// Omitted, when not 0, makes this problem the note that this many
	// problems of File were left out (Cap).
	Omitted int `json:"-"`
}

// InSchema says whether p is about a key or value that a schema describes:
// a schema or rule problem with a field path (one about a whole file, the
// YAML structure or a kit's layout is not).
func (p Problem) InSchema() bool { return p.Path != "" && (p.Kind == Schema || p.Kind == Rule) }

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

// Sort orders problems by file, line, column, path and message; the note
// on a file's left-out problems comes last among that file's.
func (ps Problems) Sort() {
	isNote := func(p Problem) int { return min(max(p.Omitted, 0), 1) }
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(isNote(a), isNote(b)), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column), strings.Compare(a.Path, b.Path), strings.Compare(a.Message, b.Message))
	})
}

// MaxPerFile is how many problems of one file are listed: every problem
// at once helps a person fix a file, but a hostile input (any job
// submitter writes a launch request's meta) can hold hundreds of
// thousands, which made a 42 MB error envelope. The rest are counted.
const MaxPerFile = 100

// maxText is the longest file name, path, message or hint a problem shows,
// in bytes: a message may quote a value, and a value may be megabytes
// long. A longer text is cut and says how much was left out.
const maxText = 4096

// OmittedNote is the problem that stands for n problems of file that are
// not listed; kind is the kind of the first of them.
func OmittedNote(file string, kind Kind, n int) Problem {
	return Problem{Kind: kind, File: file, Omitted: n,
		Message: fmt.Sprintf("%d more problem(s) in this file are not listed (at most %d are shown per file)", n, MaxPerFile),
		Hint:    "fix the problems listed and run again to see the rest"}
}

// Cap keeps, for each file, its first MaxPerFile problems in the order
// given, cuts every text to maxText bytes, and ends the problems of a file
// whose problems were left out with one OmittedNote counting all of them
// (notes already among ps are added up, not repeated).
func Cap(ps Problems) Problems {
	if ps == nil {
		return nil
	}
	type fileCount struct {
		listed, omitted int
		kind            Kind
	}
	counts := map[string]*fileCount{}
	var order []string
	out := make(Problems, 0, min(len(ps), 4*MaxPerFile))
	for _, p := range ps {
		c := counts[p.File]
		if c == nil {
			c = &fileCount{}
			counts[p.File] = c
			order = append(order, p.File)
		}
		if p.Omitted > 0 || c.listed >= MaxPerFile {
			if c.omitted == 0 {
				c.kind = p.Kind
			}
			c.omitted += max(p.Omitted, 1)
			continue
		}
		c.listed++
		out = append(out, p.shortened())
	}
	for _, f := range order {
		if c := counts[f]; c.omitted > 0 {
			out = append(out, OmittedNote(ShortenText(f), c.kind, c.omitted))
		}
	}
	return out
}

// shortened is p with each text cut to maxText bytes.
func (p Problem) shortened() Problem {
	p.File, p.Path, p.Message, p.Hint = ShortenText(p.File), ShortenText(p.Path), ShortenText(p.Message), ShortenText(p.Hint)
	return p
}

// ShortenText cuts s to at most maxText bytes (at a character boundary)
// and says how many bytes were left out.
func ShortenText(s string) string {
	if len(s) <= maxText {
		return s
	}
	const room = maxText - 64 // for the note
	cut := room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more bytes not shown)", len(s)-cut)
}
