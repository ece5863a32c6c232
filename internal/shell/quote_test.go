package shell

import (
	"os/exec"
	"testing"
)

func TestQuoteForms(t *testing.T) {
	cases := map[string]string{
		"":              "''",
		"abc":           "abc",
		"/a/b-c_d.e":    "/a/b-c_d.e",
		"a b":           "'a b'",
		"it's":          `'it'"'"'s'`,
		"$(id)":         "'$(id)'",
		"ü":             "'ü'",
		"-n":            "-n",
		"x=1,y:2@3%4+5": "x=1,y:2@3%4+5",
	}
	for in, want := range cases {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestQuoteRoundTripsThroughBash proves the quoting against a real bash.
func TestQuoteRoundTripsThroughBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is required for the shell-safety tests: %v", err)
	}
	hostile := []string{"", " ", "'", `"`, "$(touch /tmp/pwned)", "`id`", `\`, "a\nb", "*", "?[a]",
		"-e", "--x", "ü😀", "'\"'\"'", "$HOME", "${IFS}", "!!", "a;b|c&d", "\t", "~root", "#c"}
	for _, v := range hostile {
		out, err := exec.Command(bash, "-c", "printf '%s' "+Quote(v)).Output()
		if err != nil {
			t.Fatalf("bash failed on %q: %v", v, err)
		}
		if string(out) != v {
			t.Errorf("round trip of %q gave %q", v, out)
		}
	}
}
