package visible

import "testing"

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain/path name-1.txt", "plain/path name-1.txt"},
		{"café ☕ 日本", "café ☕ 日本"},
		{"", ""},
		{"a\nb", `"a\nb"`},
		{"x\x1b[31mred", `"x\x1b[31mred"`},
		{"tab\there", `"tab\there"`},
		{"del\x7f", `"del\x7f"`},
		{"bidi\u202etxt", `"bidi\u202etxt"`},
		{"c1\u009b2J", `"c1\u009b2J"`},
		{"broken\xe2\x82", `"broken\xe2\x82"`},
		{"nul\x00", `"nul\x00"`},
		{"nbsp\u00a0", `"nbsp\u00a0"`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	if got := Lines("one\ntwo"); got != "one\ntwo" {
		t.Errorf("printable lines changed: %q", got)
	}
	if got, want := Lines("ok\nbad\x1b]0;x\x07\nok"), "ok\n\"bad\\x1b]0;x\\a\"\nok"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}
