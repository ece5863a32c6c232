package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// multiLineKeyword marks, in an embedded schema, a string whose value may
// span lines (bash setup text, environment values). Every other string a
// schema describes is one line.
const multiLineKeyword = "x-multiline"

// CheckText is the one rule for the characters of a string value that an
// input describes, every one of which may reach a generated script or an
// sbatch argv: no NUL anywhere (no C string, argv entry or environment
// value can carry it); no carriage return or line feed in a one-line
// value (a path, a name, a directive, a command); and, in every value,
// one-line or not, no other C0 control character but tab, no DEL, no C1
// control character (U+0080..U+009F), no invisible (default-ignorable)
// Unicode character (invisible: the bidi overrides and isolates
// U+202A..U+202E and U+2066..U+2069, zero-width characters, U+FEFF, the
// Hangul fillers, variation selectors, ...), no line or paragraph
// separator (U+2028, U+2029) and no character that shows as a blank
// without being the ASCII space (blank: a no-break space in a setup line
// looks like a word break the shell does not make): each makes the text a
// reviewer reads differ from what runs (a right-to-left override reorders
// what a terminal or an editor shows). It returns what is wrong, or "".
func CheckText(s string, multiLine bool) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Sprintf("must not contain NUL (byte %d of the value)", i+1)
	}
	for i, r := range s {
		switch {
		case r == '\t':
		case r == '\n' || r == '\r':
			if !multiLine {
				return fmt.Sprintf("must be one line: no carriage return or line feed (byte %d of the value)", i+1)
			}
		case r < 0x20 || r == 0x7f:
			// ESC, ... have no place in a path, a name or a directive,
			// and would reach Slurm's argv and messages (a terminal
			// escape in a partition); in bash setup text a terminal
			// escape can hide or rewrite lines a reviewer reads (write
			// printf '\033' where a script needs one).
			return fmt.Sprintf("must not contain the control character %q (byte %d of the value)", r, i+1)
		case r >= 0x80 && r <= 0x9f:
			return fmt.Sprintf("must not contain the C1 control character U+%04X (byte %d of the value)", r, i+1)
		case invisibleWhy(r) != "":
			return fmt.Sprintf("must not contain the invisible Unicode character U+%04X (byte %d of the value): %s", r, i+1, invisibleWhy(r))
		case r != ' ' && unicode.Is(unicode.Zs, r) || r == 0x2800:
			// It shows as a blank without being the ASCII space the shell
			// splits words on: the other space separators (no-break, en,
			// em, ideographic, ... spaces) and the Braille blank U+2800.
			return fmt.Sprintf("must not contain U+%04X (byte %d of the value): it shows as a blank but is not a space to the shell or to Slurm; type a plain space (U+0020)", r, i+1)
		}
	}
	return ""
}

// invisibleWhy says what r would do if it is a character a terminal or an
// editor does not show, else "": a line or paragraph separator, or a
// default-ignorable code point: a format character (Cf: bidi controls,
// zero-width characters, U+FEFF, tag characters), one of Unicode's other
// default-ignorables (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
// the combining grapheme joiner U+034F, ...) or a variation selector.
func invisibleWhy(r rune) string {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return "a bidi control reorders how the text is shown, so a reviewer would not read what runs"
	case r == 0x2028 || r == 0x2029:
		return "a line separator an editor shows as a line break that the shell does not see"
	case unicode.Is(unicode.Cf, r):
		return "a format character is not shown, so a reviewer would not read what runs"
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r):
		return "a default-ignorable character is not shown, so a reviewer would not read what runs"
	}
	return ""
}

// checkText applies CheckText to every string value (and every name used
// as a key of an additionalProperties mapping) that the schema document doc
// describes, walking t.value beside the schema. A value that breaks the
// rule is reported once, at its node, and its schema errors are
// suppressed (they would only repeat it). Keys the schema leaves open
// (job meta's NVFlare keys) are not walked.
func (t *tree) checkText(doc map[string]any) {
	defs, _ := doc["$defs"].(map[string]any)
	// report records msg at the value (or key) at tokens and suppresses
	// the schema errors of that value.
	report := func(tokens []string, key bool, msg string) {
		l := t.locate(tokens)
		n := l.val
		if key && l.key != nil {
			n = l.key
		}
		t.add(problem.Schema, n, l.path, msg, "")
		t.suppressed[l.val] = true
	}
	// walk checks value v at the JSON pointer tokens against schema node s.
	var walk func(v any, tokens []string, s map[string]any)
	walk = func(v any, tokens []string, s map[string]any) {
		// Follow local $refs ("#/$defs/name").
		for i := 0; s != nil && i < 8; i++ {
			ref, ok := s["$ref"].(string)
			if !ok {
				break
			}
			name, ok := strings.CutPrefix(ref, "#/$defs/")
			if !ok {
				return
			}
			s, _ = defs[name].(map[string]any)
		}
		if s == nil {
			return
		}
		switch v := v.(type) {
		case string:
			multi, _ := s[multiLineKeyword].(bool)
			if msg := CheckText(v, multi); msg != "" {
				report(tokens, false, msg)
			}
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			extra, _ := s["additionalProperties"].(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(v)) {
				child := append(tokens, k)
				cs, _ := props[k].(map[string]any)
				if cs == nil && extra != nil {
					// A name the schema describes (an environment, study or
					// site name): one line, like every name.
					if msg := CheckText(k, false); msg != "" {
						report(child, true, "name "+msg)
						continue
					}
					cs = extra
				}
				walk(v[k], child, cs) // nothing to check when cs is nil
			}
		case []any:
			items, _ := s["items"].(map[string]any)
			prefix, _ := s["prefixItems"].([]any)
			for i, item := range v {
				is := items
				if i < len(prefix) {
					is, _ = prefix[i].(map[string]any)
				}
				walk(item, append(tokens, strconv.Itoa(i)), is)
			}
		}
	}
	walk(t.value, nil, doc)
}

// Explicit YAML tags a file may carry: the plain core-schema tag of each
// node kind. Anything else (!!binary, !!set, !!omap, !!timestamp, a custom
// !tag, !!str on a mapping) would be read as something it does not say.
var coreTags = map[yaml.Kind][]string{
	yaml.ScalarNode:   {"!!str", "!!int", "!!float", "!!bool", "!!null"},
	yaml.MappingNode:  {"!!map"},
	yaml.SequenceNode: {"!!seq"},
}

// checkTagHere reports an explicit tag on n (the node convert is at)
// other than a core-schema tag of its kind, or a core scalar tag its value
// does not fit (!!int abc). ok is false when n was reported.
func (t *tree) checkTagHere(n *yaml.Node) bool {
	if n.Style&yaml.TaggedStyle == 0 {
		return true
	}
	tag := n.ShortTag()
	allowed := coreTags[n.Kind]
	if !slices.Contains(allowed, tag) {
		written := n.Tag // as written, quoted when it holds anything but printable ASCII
		if strings.ContainsFunc(written, func(r rune) bool { return r <= ' ' || r > '~' }) {
			written = strconv.Quote(written)
		}
		t.addHere(problem.Structure, n, fmt.Sprintf(msgTag+"%s is not supported on a %s", written, nodeKindName(n)),
			"remove the tag; the allowed explicit tags are "+strings.Join(allowed, ", "))
		return false
	}
	if n.Kind != yaml.ScalarNode {
		return true
	}
	v, finite := scalarValue(n)
	var fit bool
	switch tag {
	case "!!str":
		fit = true
	case "!!int", "!!float":
		_, fit = v.(json.Number)
		fit = fit || !finite // .inf and .nan are reported as not finite
	case "!!bool":
		_, fit = v.(bool)
	case "!!null":
		fit = slices.Contains([]string{"", "~", "null", "Null", "NULL"}, n.Value)
	}
	if !fit {
		t.addHere(problem.Structure, n, fmt.Sprintf(msgTag+"%s does not fit the value %q", tag, n.Value), "remove the tag or fix the value")
		return false
	}
	return true
}
