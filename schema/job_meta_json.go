package schema

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// MaxJobMetaSectionBytes bounds each section of a JSON job meta that
// flare-slurm reads: the study, and each launcher_spec.<name> and
// resource_spec.<name>. A real one is a few keys (a hundred bytes);
// anything beyond this is refused, so that a hostile meta (any job
// submitter writes one) cannot make the YAML tree of what is read, the
// part that costs memory per value, large.
const MaxJobMetaSectionBytes = 16 << 10

// Top-level keys of a job meta that flare-slurm reads (the schema's
// properties); every other key is NVFlare's.
var jobMetaReadKeys = map[string]bool{"study": true, "launcher_spec": true, "resource_spec": true}

// jsonJobMeta is the part of a JSON job meta that is read as YAML for its
// checks: the same text with everything flare-slurm does not read (the
// NVFlare keys; the sections of other sites when one site is read; a
// section larger than MaxJobMetaSectionBytes) blanked out, character for
// character, so that every line and column stays where it was. visit
// finds the spans to keep while the text is scanned.
type jsonJobMeta struct {
	data      []byte
	site      string // "" for every site
	keep      spans
	oversized []oversizedSection
}

// oversizedSection is a section larger than MaxJobMetaSectionBytes.
type oversizedSection struct {
	path         string
	keyOff, size int
}

// span is a piece of the original text that is kept, or replaced by text.
type span struct {
	start, end int
	text       string // when set, written instead of the original bytes
}

// spans are the pieces of a JSON text kept when its members are visited
// (ojson.Scan: each member when it ends, after the members it holds).
type spans struct {
	list       []span
	parent     int // the key offset of the last parentKey
	parentText string
}

// parentKey is the key of the member holding member s, decoded once per
// object.
func (k *spans) parentKey(data []byte, s ojson.Span) string {
	if s.Parent != k.parent {
		k.parent, k.parentText = s.Parent, ojson.KeyText(data, s.Parent)
	}
	return k.parentText
}

// add keeps data[start:end].
func (k *spans) add(start, end int) { k.list = append(k.list, span{start: start, end: end}) }

// brackets keeps the key of member s and the brackets of its value.
func (k *spans) brackets(s ojson.Span) { k.add(s.KeyOffset, s.Offset+1); k.add(s.End-1, s.End) }

// comma keeps the comma after member s, if any: YAML reads a trailing
// comma in a flow mapping, and a blank right after a plain scalar (a
// number, null) would make it buffer the blank.
func (k *spans) comma(s ojson.Span) {
	if s.Comma >= 0 {
		k.add(s.Comma, s.Comma+1)
	}
}

// text is data with everything outside the kept spans blanked out, or
// data itself when it is not an object.
func (k *spans) text(data []byte, root ojson.Span) []byte {
	if data[root.Offset] != '{' {
		return data
	}
	k.add(root.Offset, root.Offset+1)
	k.add(root.End-1, root.End)
	slices.SortFunc(k.list, func(a, b span) int { return a.start - b.start })
	return blankExcept(data, k.list)
}

// visit keeps what the reading of m.site looks at: the keys of
// jobMetaReadKeys at the top, and the sections of the site (or every
// site) in launcher_spec and resource_spec.
func (m *jsonJobMeta) visit(s ojson.Span) {
	data := m.data
	switch {
	case s.Depth == 1 && s.KeyOffset >= 0:
		key := ojson.KeyText(data, s.KeyOffset)
		if !jobMetaReadKeys[key] {
			return
		}
		switch {
		case (key == "launcher_spec" || key == "resource_spec") && data[s.Offset] == '{', data[s.Offset] == '[':
			// A section's sites are visited at depth 2; the schema
			// refuses a list here: keep its brackets only.
			m.keep.brackets(s)
		default:
			m.keepSection(key, s)
		}
		m.keep.comma(s)
	case s.Depth == 2 && s.KeyOffset >= 0 && s.Parent >= 0:
		section, sectionDefault := m.keep.parentKey(data, s), "default"
		switch section {
		case "resource_spec":
			sectionDefault = portableDefaultKey
		case "launcher_spec":
		default:
			return
		}
		if name := ojson.KeyText(data, s.KeyOffset); m.site == "" || name == sectionDefault || name == m.site {
			m.keepSection(section+"."+name, s)
			m.keep.comma(s)
		}
	}
}

// keepSection keeps member s whole, unless its value is larger than
// MaxJobMetaSectionBytes: then only its key, with null for a value.
func (m *jsonJobMeta) keepSection(path string, s ojson.Span) {
	if s.End-s.Offset <= MaxJobMetaSectionBytes {
		m.keep.add(s.KeyOffset, s.End)
		return
	}
	m.oversized = append(m.oversized, oversizedSection{path: path, keyOff: s.KeyOffset, size: s.End - s.Offset})
	keepKeyOnly(m.data, &m.keep, s)
}

// keepKeyOnly keeps member s as its key with null for its value, or whole
// when its value is shorter than four characters.
func keepKeyOnly(data []byte, keep *spans, s ojson.Span) {
	k, v, e := s.KeyOffset, s.Offset, s.End
	if utf8.RuneCount(data[v:min(e, v+16)]) < 4 {
		keep.add(k, e)
		return
	}
	// null stands for the value, over its last four characters (not
	// bytes: the columns after it stay where they were), so that no
	// blank follows the plain scalar (YAML would buffer it).
	n := e
	for range 4 {
		_, size := utf8.DecodeLastRune(data[v:n])
		n -= max(size, 1)
	}
	keep.add(k, v)
	keep.list = append(keep.list, span{start: n, end: e, text: "null"})
}

// blankExcept copies data, writing one space for every character outside
// the kept spans (sorted, not overlapping) except line breaks.
func blankExcept(data []byte, keep []span) []byte {
	out := make([]byte, 0, len(data))
	blank := func(from, to int) {
		for i := from; i < to; {
			c := data[i]
			if c == '\n' || c == '\r' {
				out = append(out, c)
				i++
				continue
			}
			_, size := utf8.DecodeRune(data[i:min(to, i+utf8.UTFMax)])
			out = append(out, ' ')
			i += max(size, 1)
		}
	}
	at := 0
	for _, s := range keep {
		blank(at, s.start)
		if s.text != "" {
			out = append(out, s.text...) // as many characters as it replaces
		} else {
			out = append(out, data[s.start:s.end]...)
		}
		at = s.end
	}
	blank(at, len(data))
	return out
}

// jsonMetaTree parses a JSON job meta: the text must be JSON as Python's
// json.loads reads it (NVFlare reads meta.json so), its repeated keys are
// reported from the text, and only what the reading of site looks at is
// read as YAML for the checks.
func jsonMetaTree(file string, data []byte, site string, embed Embedding) *tree {
	t := &tree{file: file, suppressed: map[*yaml.Node]bool{}, embed: embed, jsonDuplicates: true}
	read := &jsonJobMeta{data: data, site: site}
	scan, ok := t.scanJSON(data, "not valid JSON: ",
		"NVFlare reads a job's meta with Python's json.loads: no comments, quoted keys, double quotes, no trailing commas", read.visit)
	if !ok || !t.parseJSON(data, read.keep.text(data, scan.Root), scan, nil) {
		return t
	}
	for _, o := range read.oversized {
		line, col := ojson.Position(data, o.keyOff)
		if t.full() {
			t.omit(problem.Schema)
			continue
		}
		t.probs = append(t.probs, t.final(Problem{Kind: problem.Schema, File: file, Line: line, Column: col, Path: o.path, AtKey: true,
			Message: fmt.Sprintf("is %d bytes long; flare-slurm reads at most %d bytes of a job meta section", o.size, MaxJobMetaSectionBytes),
			Hint:    "a section holds a few Slurm or resource keys: is this the right job?"}))
	}
	return t
}

// scanJSON checks that data is JSON as Python's json.loads reads it,
// telling visit (unless nil) where each member and item is; a syntax
// error is the tree's one problem (its message after prefix, with hint),
// and ok is false.
func (t *tree) scanJSON(data []byte, prefix, hint string, visit func(ojson.Span)) (ojson.ScanResult, bool) {
	scan, err := ojson.Scan(data, problem.MaxPerFile, visit)
	if err != nil {
		t.probs = append(t.probs, t.final(jsonSyntaxProblem(t.file, prefix, hint, err)))
		return scan, false
	}
	return scan, true
}

// jsonSyntaxProblem is the problem of a JSON text ojson cannot read: its
// message after prefix, at its position.
func jsonSyntaxProblem(file, prefix, hint string, err error) Problem {
	p := Problem{Kind: problem.Syntax, File: file, Message: prefix + err.Error(), Hint: hint}
	var se *ojson.SyntaxError
	if errors.As(err, &se) {
		p.Line, p.Column, p.Message = se.Line, se.Column, prefix+se.Msg
	}
	return p
}

// parseJSON reads text, the JSON data (scanned) with what is not read
// blanked out (every position kept), as YAML into t, and reports the
// repeated keys the scan found (but those skip says are reported
// elsewhere). ok is false when the text could not be read.
func (t *tree) parseJSON(data, text []byte, scan ojson.ScanResult, skip func(path string) bool) bool {
	if i, r := firstUnreadable(text); i >= 0 {
		// Valid JSON that YAML does not read as JSON does: DEL and C1
		// controls (YAML refuses them, or takes U+0085 for a line break)
		// and the line separators U+2028 and U+2029. The text rule refuses
		// each of them in every value anyway.
		line, col := ojson.Position(text, i)
		msg := fmt.Sprintf("must not contain the control character U+%04X", r)
		if r == 0x2028 || r == 0x2029 {
			msg = fmt.Sprintf("must not contain the invisible Unicode character U+%04X", r)
		}
		t.probs = append(t.probs, t.final(Problem{Kind: problem.Schema, File: t.file, Line: line, Column: col, Message: msg, Hint: "remove it"}))
		return false
	}
	parseTreeWith(t, text)
	for _, d := range scan.Duplicates {
		if skip != nil && skip(d.Path) {
			continue
		}
		line, col := ojson.Position(data, d.KeyOffset)
		first, _ := ojson.Position(data, d.FirstOffset)
		t.add(problem.Structure, &yaml.Node{Line: line, Column: col}, d.Path, fmt.Sprintf(msgDuplicate+" (first defined at line %d)", t.lineText(first)), "remove one of them")
	}
	if skip == nil {
		for range scan.More {
			t.omit(problem.Structure)
		}
	}
	return true
}

// firstUnreadable is the offset and character of the first DEL, C1
// control or line separator in text, or -1.
func firstUnreadable(text []byte) (int, rune) {
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 {
			return i, r
		}
		i += size
	}
	return -1, 0
}
