package ojson

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
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

func writeValue(buf *bytes.Buffer, v *Value, level int) {
	if v == nil {
		buf.WriteString("null")
		return
	}
	switch v.Kind {
	case Null:
		buf.WriteString("null")
	case Bool:
		buf.WriteString(strconv.FormatBool(v.Bool))
	case Number:
		buf.WriteString(v.Num)
	case String:
		writeString(buf, v.Str)
	case Array, Object:
		// An empty one is [] or {}; each item or member is on a line of its
		// own, indented by 4 spaces a level.
		brackets, n := "[]", len(v.Items)
		if v.Kind == Object {
			brackets, n = "{}", len(v.Members)
		}
		buf.WriteByte(brackets[0])
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString("\n" + strings.Repeat("    ", level+1))
			if v.Kind == Array {
				writeValue(buf, v.Items[i], level+1)
				continue
			}
			writeString(buf, v.Members[i].Key)
			buf.WriteString(": ")
			writeValue(buf, v.Members[i].Value, level+1)
		}
		if n > 0 {
			buf.WriteString("\n" + strings.Repeat("    ", level))
		}
		buf.WriteByte(brackets[1])
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
		if e := strings.IndexByte("\"\\\b\f\n\r\t", c); e >= 0 {
			buf.WriteString(`\"\\\b\f\n\r\t`[2*e : 2*e+2])
			i++
			continue
		}
		if c >= 0x20 && c < 0x7f {
			buf.WriteByte(c)
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
		for _, u := range utf16.AppendRune(nil, r) {
			fmt.Fprintf(buf, `\u%04x`, u)
		}
	}
	buf.WriteByte('"')
}
