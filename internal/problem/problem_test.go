package problem

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCap (issue 25 item 7): at most MaxPerFile problems per file are
// listed, in the order given, and one note per file says how many were
// left out; notes already present are added up.
func TestCap(t *testing.T) {
	var ps Problems
	for i := range 250 {
		ps = append(ps, Problem{Kind: Schema, File: "a.json", Line: i + 1, Message: "bad"})
	}
	ps = append(ps, Problem{Kind: Rule, File: "b.yaml", Message: "one"})
	ps = append(ps, OmittedNote("a.json", Structure, 7))
	got := Cap(ps)
	if len(got) != MaxPerFile+2 {
		t.Fatalf("%d problems, want %d", len(got), MaxPerFile+2)
	}
	if got[MaxPerFile-1].Line != MaxPerFile || got[MaxPerFile].File != "b.yaml" {
		t.Errorf("order: %v, %v", got[MaxPerFile-1], got[MaxPerFile])
	}
	note := got[len(got)-1]
	if note.File != "a.json" || note.Omitted != 157 || note.Kind != Schema ||
		note.Message != "157 more problem(s) in this file are not listed (at most 100 are shown per file)" {
		t.Errorf("note %+v", note)
	}
	if Cap(nil) != nil || len(Cap(Problems{{File: "x"}})) != 1 {
		t.Error("few problems are kept as they are")
	}
}

// TestShortenText: a text longer than maxText bytes is cut at a character
// boundary and says how much was left out; a message quoting a megabyte
// value stays a few kilobytes.
func TestShortenText(t *testing.T) {
	long := strings.Repeat("é", 1<<20)
	got := ShortenText(long)
	if len(got) > maxText || !utf8.ValidString(got) || !strings.HasSuffix(got, fmt.Sprintf("more bytes not shown)")) {
		t.Errorf("shortened to %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-40:])
	}
	if s := "short"; ShortenText(s) != s {
		t.Error("a short text is kept")
	}
	p := Problem{File: "f", Message: long, Hint: long, Path: long}.shortened()
	if len(p.Message) > maxText || len(p.Hint) > maxText || len(p.Path) > maxText {
		t.Errorf("problem texts %d/%d/%d bytes", len(p.Message), len(p.Hint), len(p.Path))
	}
}
