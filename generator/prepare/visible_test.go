package prepare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Issue 9 item 13: names with characters that are not printable (a
// newline, an escape, a broken UTF-8 sequence) are shown Go-quoted in the
// --check diff: one change is one line and no terminal escape runs.
func TestCheckQuotesNamesThatAreNotPrintable(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.run(t, out)
	names := map[string]string{
		"evil\x1b[2J\nname": `"ws/transfer/evil\x1b[2J\nname"`,
		"broken\xe2\x82":    `"ws/transfer/broken\xe2\x82"`,
		"tab\tname":         `"ws/transfer/tab\tname"`,
	}
	for name := range names {
		if err := os.WriteFile(filepath.Join(out, "transfer", name), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Diff(f.render(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(d.Text, "\x1b\t") || !utf8.ValidString(d.Text) {
		t.Errorf("diff carries raw control characters or broken UTF-8:\n%q", d.Text)
	}
	for _, quoted := range names {
		want := "--- a/" + quoted + "\n+++ /dev/null\n"
		if !strings.Contains(d.Text, want) {
			t.Errorf("diff lacks %q:\n%s", want, d.Text)
		}
	}
}
