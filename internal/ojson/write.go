package ojson

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Marshal writes v as Python's json.dumps(v, indent=4) does, followed by a
// newline (NVFlare writes its JSON files with one).
func Marshal(v *Value) []byte {
	var buf bytes.Buffer
	writeValue(&buf, v, 0)
	buf.WriteByte('\n')
	return buf.Bytes()
}

const indent = "    "

func newline(buf *bytes.Buffer, level int) {
	buf.WriteByte('\n')
	for range level {
		buf.WriteString(indent)
	}
}

func writeValue(buf *bytes.Buffer, v *Value, level int) {
	if v == nil {
		buf.WriteString("null")
		return
	}
	switch v.Kind {
	case Null:
		buf.WriteString("null")
	case Bool:
		if v.Bool {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case Number:
		buf.WriteString(v.Num)
	case String:
		writeString(buf, v.Str)
	case Array:
		if len(v.Items) == 0 {
			buf.WriteString("[]")
			return
		}
		buf.WriteByte('[')
		for i, item := range v.Items {
			if i > 0 {
				buf.WriteByte(',')
			}
			newline(buf, level+1)
			writeValue(buf, item, level+1)
		}
		newline(buf, level)
		buf.WriteByte(']')
	case Object:
		if len(v.Members) == 0 {
			buf.WriteString("{}")
			return
		}
		buf.WriteByte('{')
		for i, m := range v.Members {
			if i > 0 {
				buf.WriteByte(',')
			}
			newline(buf, level+1)
			writeString(buf, m.Key)
			buf.WriteString(": ")
			writeValue(buf, m.Value, level+1)
		}
		newline(buf, level)
		buf.WriteByte('}')
	default:
		panic(fmt.Sprintf("ojson: value of unknown kind %d", v.Kind))
	}
}

// writeString escapes like json.dumps with ensure_ascii=True: the short
// escapes for " \ \b \f \n \r \t, \uXXXX (lowercase hex, UTF-16 surrogate
// pairs above U+FFFF) for every other character outside space..~.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			switch c {
			case '"':
				buf.WriteString(`\"`)
			case '\\':
				buf.WriteString(`\\`)
			default:
				buf.WriteByte(c)
			}
			i++
			continue
		}
		switch c {
		case '\b':
			buf.WriteString(`\b`)
			i++
			continue
		case '\f':
			buf.WriteString(`\f`)
			i++
			continue
		case '\n':
			buf.WriteString(`\n`)
			i++
			continue
		case '\r':
			buf.WriteString(`\r`)
			i++
			continue
		case '\t':
			buf.WriteString(`\t`)
			i++
			continue
		}
		// A lone surrogate kept by Parse in generalised UTF-8.
		if c == 0xED && i+2 < len(s) && s[i+1]&0xE0 == 0xA0 && s[i+2]&0xC0 == 0x80 {
			u := 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			fmt.Fprintf(buf, `\u%04x`, u)
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r > 0xFFFF {
			r -= 0x10000
			fmt.Fprintf(buf, `\u%04x\u%04x`, 0xD800+(r>>10)&0x3FF, 0xDC00+r&0x3FF)
			continue
		}
		fmt.Fprintf(buf, `\u%04x`, r)
	}
	buf.WriteByte('"')
}
