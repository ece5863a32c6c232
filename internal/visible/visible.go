// Package visible shows names, paths and messages on a terminal safely:
// the one quoting helper for display. A string whose every character is
// printable is shown as it is; any other (a newline, a tab, an escape
// character that would start a terminal control sequence, a bidi
// override, a broken UTF-8 sequence) is shown in Go's %q form, so one
// problem stays one line and nothing in it reaches the terminal raw.
//
// This is for people; quoting for a shell is internal/shell's job.
package visible

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Quote is s when every character of s is printable as Go's
// strconv.IsPrint defines it (letters, marks, numbers, punctuation,
// symbols and the ASCII space) and s is valid UTF-8, else s in Go's %q
// form.
func Quote(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}

// Lines applies Quote to each line of a message of several lines, keeping
// the line breaks it was written with.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Quote(l)
	}
	return strings.Join(lines, "\n")
}
