package ojson

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SyntaxError is a document that is not JSON (in Python's reading).
type SyntaxError struct {
	Line   int // 1-based
	Column int // 1-based, in characters
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d column %d: %s", e.Line, e.Column, e.Msg)
}

// maxDepth bounds nesting so that a hostile document cannot exhaust the
// stack (Python stops at its recursion limit, about the same depth).
const maxDepth = 1000

// Parse reads one JSON document.
func Parse(data []byte) (*Value, error) {
	return parse(&parser{data: data})
}

func parse(p *parser) (*Value, error) {
	data := p.data
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, p.errorf("unexpected UTF-8 byte-order mark (save the file without it)")
	}
	if !utf8.Valid(data) {
		// At the first byte that is not UTF-8.
		for r, size := utf8.DecodeRune(data); r != utf8.RuneError || size != 1; r, size = utf8.DecodeRune(data[p.pos:]) {
			p.pos += size
		}
		return nil, p.errorf("invalid UTF-8")
	}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errorf("extra data after the JSON value")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int

	// scan: check the text without building values (Scan, Each); path
	// is the way to the value being read; dups: found collects the
	// repeated keys; visit is told where each member and item is.
	scan  bool
	dups  bool
	path  []pathStep
	found scanFound
	visit func(Span) bool
}

func (p *parser) errorf(format string, args ...any) error {
	line, col := Position(p.data, p.pos)
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// Position is the 1-based line and column of byte offset in data, the
// column counted in characters (UTF-8 sequences), as editors count them.
func Position(data []byte, offset int) (line, column int) {
	line, column = 1, 1
	for _, c := range data[:min(max(offset, 0), len(data))] {
		switch {
		case c == '\n':
			line, column = line+1, 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			column++
		}
	}
	return line, column
}

func (p *parser) skipSpace() { p.pos = SkipSpace(p.data, p.pos) }

// literals are the words Python's json.loads reads as values, in the
// order of their first bytes in value.
var literals = []struct {
	word  string
	value Value
}{
	{"null", Value{Kind: Null}}, {"true", Value{Kind: Bool, Bool: true}}, {"false", Value{Kind: Bool}},
	{"NaN", Value{Kind: Number, Num: "NaN"}}, {"Infinity", Value{Kind: Number, Num: "Infinity"}},
	{"-Infinity", Value{Kind: Number, Num: "-Infinity"}},
}

// value reads a value (nil when the parser only scans), noting its
// offset.
func (p *parser) value(depth int) (v *Value, err error) {
	defer func(start int) {
		if v != nil {
			v.Offset = start
		}
	}(p.pos)
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d levels", maxDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("expecting a value")
	}
	c := p.data[p.pos]
	switch c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		s, err := p.str(!p.scan)
		if p.scan || err != nil {
			return nil, err
		}
		return StringValue(s), nil
	}
	// Each word starts with its own byte; a number is tried when none is
	// there.
	if i := strings.IndexByte("ntfNI-", c); i >= 0 {
		if w := literals[i].word; string(p.data[p.pos:min(len(p.data), p.pos+len(w))]) == w {
			p.pos += len(w)
			if p.scan {
				return nil, nil
			}
			v := literals[i].value
			return &v, nil
		}
	}
	return p.number()
}

func (p *parser) object(depth int) (*Value, error) {
	p.pos++ // {
	var obj *Value
	// index maps each key to its member, so that finding a repeated key
	// costs the same for the millionth key as for the first (a linear
	// search made a 300,000-key object take minutes).
	var index map[string]int
	// The keys Scan compares of every object being read share one stack:
	// this object's are keys[start:], dropped when it ends.
	start := len(p.found.keys)
	if !p.scan {
		obj, index = NewObject(), map[string]int{}
	} else if p.dups {
		defer func() { p.found.keys = p.found.keys[:start] }()
	}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expecting a property name enclosed in double quotes")
		}
		keyOffset := p.pos
		key, err := p.str(!p.scan)
		if err != nil {
			return nil, err
		}
		if p.dups {
			p.addKey(keyOffset)
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expecting ':' delimiter")
		}
		p.pos++
		p.skipSpace()
		val, done, err := p.item(depth, '}', pathStep{key: keyOffset})
		if err != nil {
			return nil, err
		}
		if !p.scan {
			// A repeated key keeps its first position and its last value,
			// as a Python dict built from the pairs does.
			if i, dup := index[key]; dup {
				obj.Members[i].Value = val
			} else {
				index[key] = len(obj.Members)
				obj.Members = append(obj.Members, Member{Key: key, Value: val})
			}
		}
		if done {
			if p.dups {
				p.duplicatesOf(p.found.keys[start:])
			}
			return obj, nil
		}
	}
}

func (p *parser) array(depth int) (*Value, error) {
	p.pos++ // [
	var arr *Value
	if !p.scan {
		arr = NewArray()
	}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for i := 0; ; i++ {
		val, done, err := p.item(depth, ']', pathStep{key: -1, index: i})
		if err != nil {
			return nil, err
		}
		if !p.scan {
			arr.Items = append(arr.Items, val)
		}
		if done {
			return arr, nil
		}
	}
}

// item reads the value of a member or item (at step of the path) and
// what follows it: a comma, or close, which ends the object or array
// (done). A scan tells visit where the item is.
func (p *parser) item(depth int, close byte, step pathStep) (v *Value, done bool, err error) {
	start := p.pos
	p.path = append(p.path, step)
	v, err = p.value(depth + 1)
	p.path = p.path[:len(p.path)-1]
	if err != nil {
		return nil, false, err
	}
	end := p.pos
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != ',' && p.data[p.pos] != close {
		return nil, false, p.errorf("expecting ',' delimiter")
	}
	done = p.data[p.pos] == close
	if p.visit != nil {
		s := Span{Depth: len(p.path) + 1, Parent: -1, KeyOffset: step.key, Offset: start, End: end, Comma: p.pos}
		if n := len(p.path); n > 0 {
			s.Parent = p.path[n-1].key
		}
		if done {
			s.Comma = -1
		}
		if !p.visit(s) {
			return nil, false, errStop
		}
	}
	p.pos++
	if !done {
		p.skipSpace()
	}
	return v, done, nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? like Python's
// scanner: an integer stays exact, anything with a fraction or exponent
// becomes a float.
func (p *parser) number() (*Value, error) {
	d, start, i := p.data, p.pos, p.pos
	digits := func(i int) int {
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i
	}
	if d[i] == '-' {
		i++
	}
	switch n := digits(i); {
	case n == i:
		p.pos = i
		return nil, p.errorf("expecting a value")
	case d[i] == '0':
		i++
	default:
		i = n
	}
	intEnd := i
	if i+1 < len(d) && d[i] == '.' && digits(i+1) > i+1 {
		i = digits(i + 1)
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		j := i + 1
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if n := digits(j); n > j {
			i = n
		}
	}
	p.pos = i
	if p.scan {
		return nil, nil
	}
	text := string(d[start:i])
	switch {
	case i == intEnd && text == "-0":
		return &Value{Kind: Number, Num: "0"}, nil
	case i == intEnd:
		return &Value{Kind: Number, Num: text}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.errorf("bad number %q", text)
	}
	return FloatValue(f), nil
}

// str reads a string, kept unless keep is false (a check). A lone UTF-16
// surrogate escape (which Python keeps) is stored as its 3-byte
// generalised UTF-8 form so that writing the value back reproduces the
// same escape.
func (p *parser) str(keep bool) (string, error) {
	var b strings.Builder
	p.pos++ // "
	for {
		start := p.pos
		for p.pos < len(p.data) && p.data[p.pos] != '"' && p.data[p.pos] != '\\' && p.data[p.pos] >= 0x20 {
			p.pos++
		}
		if keep {
			b.Write(p.data[start:p.pos])
		}
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("invalid control character in string")
		}
		// Backslash escape.
		if p.pos+1 >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		esc := p.data[p.pos+1]
		p.pos += 2
		if i := strings.IndexByte(`"\/bfnrt`, esc); i >= 0 {
			if keep {
				b.WriteByte("\"\\/\b\f\n\r\t"[i])
			}
			continue
		}
		if esc != 'u' {
			p.pos -= 2
			return "", p.errorf("invalid \\escape")
		}
		u, ok := p.hex4()
		if !ok {
			return "", p.errorf("invalid \\uXXXX escape")
		}
		r := rune(u)
		if 0xD800 <= u && u <= 0xDBFF && p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			save := p.pos
			p.pos += 2
			if lo, ok := p.hex4(); ok && 0xDC00 <= lo && lo <= 0xDFFF {
				r = rune(0x10000 + (u-0xD800)<<10 + (lo - 0xDC00))
			} else {
				p.pos = save
			}
		}
		switch {
		case !keep:
		case 0xD800 <= r && r <= 0xDFFF:
			b.Write([]byte{0xED, byte(0xA0 | (u>>6)&0x1F), byte(0x80 | u&0x3F)})
		default:
			b.WriteRune(r)
		}
	}
}

func (p *parser) hex4() (int, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return int(n), true
}
