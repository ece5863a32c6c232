package schema

// YAML 1.1 readings: NVFlare reads slurm.yaml and study_runtime.yaml with
// PyYAML's SafeLoader, a YAML 1.1 reader; flare-slurm reads them as YAML
// 1.2 (go.yaml.in/yaml/v3). For most plain scalars the two agree, but an
// unquoted `time: 12:00:00` is the integer 43200 to PyYAML (sexagesimal)
// and the text "12:00:00" here, `partition: yes` is a boolean there, and a
// study env value `0o17` is the text "0o17" there and 15 here. One file
// would then mean two things. ReadingDifferences lists every plain scalar
// (key or value) whose two readings differ, with its position and the
// quoted spelling both readers agree on.
//
// The 1.1 rules below are PyYAML's implicit resolvers (yaml/resolver.py)
// and constructors (yaml/constructor.py) for the core tags: bool, int,
// float, null and timestamp. The 1.2 reading is scalarValue's, the one
// every check and the compiler use.

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// msgYAML11Prefix starts the message of every reading difference.
const msgYAML11Prefix = "YAML 1.1 readers "

// reading11 is what PyYAML makes of a plain scalar: one of the kinds
// "str", "bool", "int", "float", "null", "timestamp", and the value (bool,
// *big.Int, float64, nil or, for str and timestamp, the text).
type reading11 struct {
	kind string
	val  any
}

// read11 resolves a plain scalar as PyYAML's SafeLoader does. PyYAML picks
// the candidate resolvers by the first character (each resolver's own
// first characters, which the scanners check), then tries them in the
// order they were added (bool, float, int, merge, null, timestamp); every
// resolver matches the whole text, so the order only matters where two
// could match, which none of these do.
func read11(text string) reading11 {
	switch {
	case is11Bool(text):
		v := strings.ToLower(text)
		return reading11{"bool", v == "yes" || v == "true" || v == "on"}
	case is11Float(text):
		return reading11{"float", float11(text)}
	case is11Int(text):
		return reading11{"int", int11(text)}
	case is11Null(text):
		return reading11{"null", nil}
	case is11Timestamp(text):
		return reading11{"timestamp", text}
	}
	return reading11{"str", text}
}

// int11 is PyYAML's construct_yaml_int: underscores dropped, 0b binary,
// 0x hexadecimal, a leading 0 octal, a: b: c base 60.
func int11(text string) *big.Int {
	v := strings.ReplaceAll(text, "_", "")
	sign := int64(1)
	if v[0] == '-' {
		sign = -1
	}
	if v[0] == '+' || v[0] == '-' {
		v = v[1:]
	}
	n := new(big.Int)
	switch {
	case v == "0":
	case strings.HasPrefix(v, "0b"):
		n.SetString(v[2:], 2)
	case strings.HasPrefix(v, "0x"):
		n.SetString(v[2:], 16)
	case v[0] == '0':
		n.SetString(v, 8)
	case strings.Contains(v, ":"):
		// digits of any length: Python's int() has no limit
		d := new(big.Int)
		for _, part := range strings.Split(v, ":") {
			d.SetString(part, 10)
			n.Mul(n, big.NewInt(60))
			n.Add(n, d)
		}
	default:
		n.SetString(v, 10)
	}
	return n.Mul(n, big.NewInt(sign))
}

// float11 is PyYAML's construct_yaml_float.
func float11(text string) float64 {
	v := strings.ToLower(strings.ReplaceAll(text, "_", ""))
	sign := 1.0
	if v[0] == '-' {
		sign = -1
	}
	if v[0] == '+' || v[0] == '-' {
		v = v[1:]
	}
	switch {
	case v == ".inf":
		return sign * math.Inf(1)
	case v == ".nan":
		return math.NaN()
	case strings.Contains(v, ":"):
		// PyYAML's order: the last part first, each times its power of
		// 60, so the rounding is the same
		parts := strings.Split(v, ":")
		f, base := 0.0, 1.0
		for i := len(parts) - 1; i >= 0; i-- {
			d, _ := strconv.ParseFloat(parts[i], 64)
			f += d * base
			base *= 60
		}
		return sign * f
	}
	f, _ := strconv.ParseFloat(v, 64)
	return sign * f
}

// pyStr is Python's str() of a 1.1 reading, as NVFlare turns a study env
// value into text (booleans as "true"/"false", as it special-cases them).
func (r reading11) pyStr() string {
	switch r.kind {
	case "bool":
		return strconv.FormatBool(r.val.(bool))
	case "int":
		return r.val.(*big.Int).String()
	case "float":
		return pyFloat(r.val.(float64))
	case "null":
		return "None"
	}
	return r.val.(string)
}

// pyFloat is Python's repr of a float: the shortest digits that read back,
// fixed notation with a ".0" when integral for exponents -4..15, else
// scientific with a two-digit exponent at least.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// describe names a 1.1 reading for a message: the boolean true, the
// integer 43200, the text "0o17".
func (r reading11) describe() string {
	switch r.kind {
	case "bool":
		return fmt.Sprintf("the boolean %t", r.val)
	case "int":
		return "the integer " + r.val.(*big.Int).String()
	case "float":
		return "the number " + pyFloat(r.val.(float64))
	case "null":
		return "null (no value)"
	case "timestamp":
		return "a date/time"
	}
	return "the text " + strconv.Quote(r.val.(string))
}

// describe12 names this tool's reading of plain scalar n.
func describe12(n *yaml.Node) string {
	v, ok := scalarValue(n)
	if !ok {
		return "a non-finite number"
	}
	switch v := v.(type) {
	case nil:
		return "null (no value)"
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	case string:
		return "the text " + strconv.Quote(v)
	}
	if n.ShortTag() == "!!int" {
		return "the integer " + fmt.Sprint(v)
	}
	return "the number " + fmt.Sprint(v)
}

// sameReading says whether the 1.1 reading r and this tool's reading of
// plain scalar n mean the same. asText compares the text each tool makes of
// the value (study env values, which both turn into strings); otherwise
// the typed values are compared (numbers by value, so 1.0 and 1 agree).
func sameReading(r reading11, n *yaml.Node, asText bool) bool {
	if asText {
		if r.kind == "null" {
			return false // NVFlare refuses a null env value; we do too
		}
		if r.kind == "timestamp" && len(n.Value) != len("2001-12-14") {
			// A date and time: NVFlare sets Python's str() of a datetime
			// ("2001-12-14 10:00:00+00:00"), never the text as written.
			return false
		}
		return r.pyStr() == scalarText(n)
	}
	v, ok := scalarValue(n)
	if !ok {
		return r.kind == "float" && (math.IsInf(r.val.(float64), 0) || math.IsNaN(r.val.(float64)))
	}
	switch v := v.(type) {
	case nil:
		return r.kind == "null"
	case bool:
		return r.kind == "bool" && r.val.(bool) == v
	case string:
		return r.kind == "str" && r.val.(string) == v
	default: // json.Number
		mine, ok := new(big.Rat).SetString(fmt.Sprint(v))
		if !ok {
			return false
		}
		switch r.kind {
		case "int":
			return mine.Cmp(new(big.Rat).SetInt(r.val.(*big.Int))) == 0
		case "float":
			f := r.val.(float64)
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return false
			}
			return mine.Cmp(new(big.Rat).SetFloat64(f)) == 0
		}
	}
	return false
}

// ReadingDifferences lists every plain scalar of file (a YAML document held
// in data) whose YAML 1.1 reading (NVFlare's PyYAML) differs from this
// tool's YAML 1.2 reading. textPaths decides which values both tools turn
// into text (compared as text). A file that does not parse has none: its
// syntax problem is reported by the loader.
func ReadingDifferences(file string, data []byte, textPaths func(path string) bool) Problems {
	var out Problems
	for _, d := range readingDifferences(file, data, textPaths) {
		out = append(out, d.problem)
	}
	return out
}

// readingDiff is one reading difference and the plain scalar it is about.
type readingDiff struct {
	problem Problem
	node    *yaml.Node
}

func readingDifferences(file string, data []byte, textPaths func(path string) bool) []readingDiff {
	doc, err := decodeOne(data)
	if err != nil || doc == nil || len(doc.Content) == 0 {
		return nil
	}
	var out []readingDiff
	var walk func(n *yaml.Node, path string)
	check := func(n *yaml.Node, path string, isKey bool) {
		// Style 0 is an untagged plain scalar: quoted, block and
		// explicitly tagged (TaggedStyle) scalars mean the same to both.
		if n.Kind != yaml.ScalarNode || n.Style != 0 {
			return
		}
		r := read11(n.Value)
		var same bool
		directive := !isKey && isDirectiveValue(path)
		switch {
		case isKey:
			same = r.kind == "str"
		case directive:
			// Both tools pass a directive as text: NVFlare str() of a
			// string or integer (anything else it refuses), we the
			// value's text. "08" is a float to yaml.v3 and text to PyYAML,
			// yet both pass 08.
			same = (r.kind == "str" || r.kind == "int") && r.pyStr() == scalarText(n)
		default:
			same = sameReading(r, n, textPaths != nil && textPaths(path))
		}
		if same {
			return
		}
		msg := fmt.Sprintf("%s(NVFlare's PyYAML) read %s as %s; flare-slurm (YAML 1.2) reads %s",
			msgYAML11Prefix, n.Value, r.describe(), describe12(n))
		hint := "write it quoted, " + strconv.Quote(n.Value) + ", so that both read the same text"
		switch {
		case isKey:
			msg = fmt.Sprintf("%s(NVFlare's PyYAML) read the key %s as %s; flare-slurm (YAML 1.2) reads the name %s",
				msgYAML11Prefix, n.Value, r.describe(), strconv.Quote(n.Value))
		case textPaths != nil && textPaths(path):
			msg = fmt.Sprintf("%s(NVFlare's PyYAML) read %s as %s, so NVFlare sets the variable to %s; flare-slurm (YAML 1.2) sets it to %s",
				msgYAML11Prefix, n.Value, r.describe(), strconv.Quote(r.pyStr()), strconv.Quote(scalarText(n)))
			switch r.kind {
			case "null":
				msg = fmt.Sprintf("%s(NVFlare's PyYAML) read %s as null, which NVFlare refuses; flare-slurm (YAML 1.2) sets the variable to %s",
					msgYAML11Prefix, n.Value, strconv.Quote(scalarText(n)))
			case "timestamp":
				msg = fmt.Sprintf("%s(NVFlare's PyYAML) read %s as a date and time, so NVFlare sets the variable to Python's str() of it (e.g. \"2001-12-14 10:00:00+00:00\"); flare-slurm (YAML 1.2) sets it to %s",
					msgYAML11Prefix, n.Value, strconv.Quote(scalarText(n)))
			}
		case directive && r.kind != "str" && r.kind != "int":
			msg = fmt.Sprintf("%s(NVFlare's PyYAML) read %s as %s, which NVFlare refuses (a directive must be a string or an integer); flare-slurm (YAML 1.2) passes %s",
				msgYAML11Prefix, n.Value, r.describe(), strconv.Quote(scalarText(n)))
		case n.ShortTag() == "!!int" && numberValue(n) != "":
			// the plain spelling of the number this tool reads, which
			// both readers read alike
			hint += fmt.Sprintf(", or %s if you mean the number %[1]s", numberValue(n))
		}
		out = append(out, readingDiff{Problem{Kind: problem.Schema, File: file, Line: n.Line, Column: n.Column, Path: path, Message: msg, Hint: hint, Code: WarnYAML11Reading}, n})
	}
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				child := joinPath(path, k.Value)
				check(k, child, true)
				walk(v, child)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.ScalarNode:
			check(n, path, false)
		}
	}
	walk(doc.Content[0], "")
	return out
}

// isDirectiveValue says whether dotted path names an sbatch directive's
// value: job_launcher.sbatch_directives.KEY, parent.sbatch_directives.KEY,
// or a study's studies.NAME.slurm.partition/account/qos (NVFlare takes
// those as a string or an integer too).
func isDirectiveValue(path string) bool {
	parts := strings.Split(path, ".")
	switch {
	case len(parts) == 3:
		return (parts[0] == "job_launcher" || parts[0] == "parent") && parts[1] == "sbatch_directives"
	case len(parts) == 4 && parts[0] == "studies" && parts[2] == "slurm":
		return parts[3] == "partition" || parts[3] == "account" || parts[3] == "qos"
	}
	return false
}

// isStudyEnvValue says whether dotted path names a value of a study's env
// (studies.NAME.env.VAR): NVFlare turns those into text with str().
func isStudyEnvValue(path string) bool {
	parts := strings.Split(path, ".")
	return len(parts) == 4 && parts[0] == "studies" && parts[2] == "env"
}

// ReadingWarnings are the YAML 1.1 reading differences of the YAML inputs
// that a validate of kind at path reads: a slurm.yaml, a study runtime
// file, or a kit's config.yaml and local/study_runtime.yaml. Files that
// cannot be read have none (the loader reports them).
func ReadingWarnings(kind, path string) Problems {
	var files []string
	switch kind {
	case KindSlurmConfig, KindStudyRuntime:
		files = []string{path}
	case KindKit:
		files = append(KitConfigs(path), filepath.Join(path, "local", StudyRuntimeFile))
	}
	var out Problems
	for _, f := range files {
		data, _, probs := ReadInput(f, true) // a regular file itself, not through a symlink
		if probs != nil {
			continue
		}
		out = append(out, ReadingDifferences(f, data, isStudyEnvValue)...)
	}
	return out
}

// Quoting is one plain scalar QuoteReadings quoted (or would quote).
type Quoting struct {
	Line, Column int
	Path         string
	From, To     string // the plain scalar as written, and quoted
}

// QuoteReadings rewrites a slurm.yaml or study_runtime.yaml (kind) so that
// NVFlare's YAML 1.1 reader and this tool read it alike (flare-slurm fmt
// --fix): each plain scalar ReadingDifferences reports is written quoted,
// as written ("12:00:00", "yes", "0o17"), which both read as that text.
// Nothing else changes, byte for byte: comments, order, indentation. A
// scalar whose text cannot be found as written at its position (a plain
// scalar folded over several lines) is left, and reported in left. Other
// kinds, and text that does not parse, come back unchanged.
func QuoteReadings(kind string, data []byte) (fixed []byte, done, left []Quoting) {
	if kind != KindSlurmConfig && kind != KindStudyRuntime {
		return data, nil, nil
	}
	diffs := readingDifferences("", data, isStudyEnvValue)
	lines := bytes.SplitAfter(data, []byte("\n"))
	// Edit each line from its end, so that earlier columns stay valid.
	slices.SortStableFunc(diffs, func(a, b readingDiff) int {
		return cmp.Or(cmp.Compare(a.node.Line, b.node.Line), cmp.Compare(b.node.Column, a.node.Column))
	})
	for _, d := range diffs {
		n := d.node
		q := Quoting{Line: n.Line, Column: n.Column, Path: d.problem.Path, From: n.Value, To: strconv.Quote(n.Value)} // a double-quoted YAML scalar
		if n.Line < 1 || n.Line > len(lines) {
			left = append(left, q)
			continue
		}
		line := lines[n.Line-1]
		at := byteOffset(line, n.Column-1)
		if at < 0 || !bytes.HasPrefix(line[at:], []byte(n.Value)) || n.Value == "" {
			left = append(left, q)
			continue
		}
		lines[n.Line-1] = append(append(append([]byte{}, line[:at]...), q.To...), line[at+len(n.Value):]...)
		done = append(done, q)
	}
	slices.SortFunc(done, func(a, b Quoting) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column)) })
	return bytes.Join(lines, nil), done, left
}

// byteOffset is the byte offset of rune column col (0-based) in line, or -1.
func byteOffset(line []byte, col int) int {
	off := 0
	for i := 0; i < col; i++ {
		if off >= len(line) {
			return -1
		}
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off
}
