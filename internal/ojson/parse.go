package ojson

import (
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
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		return nil, p.errorf("unexpected UTF-8 byte-order mark (save the file without it)")
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		p.pos = i
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

	// scan: check the text without building values (Scan); path is the
	// way to the value being read, found the repeated keys.
	scan  bool
	path  []pathStep
	found scanFound
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

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) literal(word string) bool {
	if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) value(depth int) (*Value, error) {
	start := p.pos
	v, err := p.bareValue(depth)
	if v != nil {
		v.Offset = start
	}
	return v, err
}

func (p *parser) bareValue(depth int) (*Value, error) {
	if depth > maxDepth {
		return nil, p.errorf("nesting deeper than %d levels", maxDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("expecting a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		if p.scan {
			return nil, p.skipStr()
		}
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return StringValue(s), nil
	case p.literal("null"):
		return p.built(nullValue), nil
	case p.literal("true"):
		return p.built(func() *Value { return BoolValue(true) }), nil
	case p.literal("false"):
		return p.built(func() *Value { return BoolValue(false) }), nil
	case p.literal("NaN"):
		return p.built(func() *Value { return &Value{Kind: Number, Num: "NaN"} }), nil
	case p.literal("Infinity"):
		return p.built(func() *Value { return &Value{Kind: Number, Num: "Infinity"} }), nil
	case p.literal("-Infinity"):
		return p.built(func() *Value { return &Value{Kind: Number, Num: "-Infinity"} }), nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	return nil, p.errorf("expecting a value")
}

// built is make() unless the parser only scans.
func (p *parser) built(make func() *Value) *Value {
	if p.scan {
		return nil
	}
	return make()
}

func (p *parser) object(depth int) (*Value, error) {
	if p.scan {
		return nil, p.scanObject(depth)
	}
	p.pos++ // {
	obj := NewObject()
	// index maps each key to its member, so that finding a repeated key
	// costs the same for the millionth key as for the first (a linear
	// search made a 300,000-key object take minutes).
	var index map[string]int
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
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expecting ':' delimiter")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		// A repeated key keeps its first position and its last value,
		// as a Python dict built from the pairs does.
		if index == nil {
			index = map[string]int{}
		}
		if i, dup := index[key]; dup {
			obj.Members[i].Value = val
		} else {
			index[key] = len(obj.Members)
			obj.Members = append(obj.Members, Member{Key: key, Value: val, KeyOffset: keyOffset})
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("expecting ',' delimiter")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.errorf("expecting ',' delimiter")
		}
	}
}

func (p *parser) array(depth int) (*Value, error) {
	p.pos++ // [
	if p.scan {
		return nil, p.scanArray(depth)
	}
	arr := NewArray()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for {
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr.Items = append(arr.Items, val)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("expecting ',' delimiter")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.errorf("expecting ',' delimiter")
		}
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? like Python's
// scanner: an integer stays exact, anything with a fraction or exponent
// becomes a float.
func (p *parser) number() (*Value, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		p.pos = i
		return nil, p.errorf("expecting a value")
	}
	isFloat := false
	if i+1 < len(d) && d[i] == '.' && isDigit(d[i+1]) {
		isFloat = true
		i++
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		j := i + 1
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if j < len(d) && isDigit(d[j]) {
			isFloat = true
			for j < len(d) && isDigit(d[j]) {
				j++
			}
			i = j
		}
	}
	p.pos = i
	if p.scan {
		return nil, nil
	}
	text := string(d[start:i])
	if !isFloat {
		if text == "-0" {
			text = "0"
		}
		return &Value{Kind: Number, Num: text}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.errorf("bad number %q", text)
	}
	return FloatValue(f), nil
}

// str reads a string. A lone UTF-16 surrogate escape (which Python keeps)
// is stored as its 3-byte generalised UTF-8 form so that writing the value
// back reproduces the same escape.
func (p *parser) str() (string, error) {
	var b strings.Builder
	err := p.readStrInto(&b)
	return b.String(), err
}

// skipStr checks a string without keeping it.
func (p *parser) skipStr() error { return p.readStrInto(discard{}) }

// strSink is where readStrInto writes a string's characters.
type strSink interface {
	Write(p []byte) (int, error)
	WriteByte(c byte) error
	WriteRune(r rune) (int, error)
}

// discard is a strSink that keeps nothing.
type discard struct{}

func (discard) Write(p []byte) (int, error)   { return len(p), nil }
func (discard) WriteByte(byte) error          { return nil }
func (discard) WriteRune(r rune) (int, error) { return utf8.RuneLen(r), nil }

func (p *parser) readStrInto(b strSink) error {
	p.pos++ // "
	for {
		start := p.pos
		for p.pos < len(p.data) && p.data[p.pos] != '"' && p.data[p.pos] != '\\' && p.data[p.pos] >= 0x20 {
			p.pos++
		}
		b.Write(p.data[start:p.pos])
		if p.pos >= len(p.data) {
			return p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c < 0x20:
			return p.errorf("invalid control character in string")
		}
		// Backslash escape.
		if p.pos+1 >= len(p.data) {
			return p.errorf("unterminated string")
		}
		esc := p.data[p.pos+1]
		p.pos += 2
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			u, ok := p.hex4()
			if !ok {
				return p.errorf("invalid \\uXXXX escape")
			}
			if 0xD800 <= u && u <= 0xDBFF && p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
				save := p.pos
				p.pos += 2
				if lo, ok := p.hex4(); ok && 0xDC00 <= lo && lo <= 0xDFFF {
					b.WriteRune(rune(0x10000 + (u-0xD800)<<10 + (lo - 0xDC00)))
					continue
				}
				p.pos = save
			}
			if 0xD800 <= u && u <= 0xDFFF {
				b.Write([]byte{0xED, byte(0xA0 | (u>>6)&0x1F), byte(0x80 | u&0x3F)})
				continue
			}
			b.WriteRune(rune(u))
		default:
			p.pos -= 2
			return p.errorf("invalid \\escape")
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
