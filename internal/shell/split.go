package shell

import (
	"errors"
	"strings"
)

// errUnclosedQuote and errTrailingEscape are the two ways Split can fail.
var (
	errUnclosedQuote  = errors.New("no closing quotation")
	errTrailingEscape = errors.New("no escaped character after a final backslash")
)

// Split breaks s into words the way a POSIX shell would, without any
// expansion: the same result as Python's shlex.split(s) (POSIX mode, no
// comments). Words are separated by space, tab, CR and LF; single quotes
// keep everything literally; inside double quotes a backslash escapes only
// '"' and '\'; outside quotes a backslash makes the next character literal.
// A quoted empty string (two quotes) is a word. Split(Join(w)) == w for
// every w.
func Split(s string) ([]string, error) {
	words := []string{}
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\r', '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errTrailingEscape
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errUnclosedQuote
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				d := s[i]
				if d == '\\' {
					if i+1 >= len(s) {
						return nil, errTrailingEscape
					}
					if next := s[i+1]; next == '"' || next == '\\' {
						cur.WriteByte(next)
						i++
						continue
					}
				}
				cur.WriteByte(d)
			}
			if i >= len(s) {
				return nil, errUnclosedQuote
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
