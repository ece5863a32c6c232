package schema

import (
	"regexp"
	"testing"
)

// PyYAML's implicit resolver expressions (yaml/resolver.py, the core tags),
// the oracle of the scanners in yaml11_resolve.go.
var resolve11Regexps = map[string]*regexp.Regexp{
	"bool": regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`),
	"float": regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?` +
		`|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?` +
		`|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*` +
		`|[-+]?\.(?:inf|Inf|INF)` +
		`|\.(?:nan|NaN|NAN))$`),
	"int": regexp.MustCompile(`^(?:[-+]?0b[0-1_]+` +
		`|[-+]?0[0-7_]+` +
		`|[-+]?(?:0|[1-9][0-9_]*)` +
		`|[-+]?0x[0-9a-fA-F_]+` +
		`|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`),
	"null": regexp.MustCompile(`^(?:~|null|Null|NULL|)$`),
	"timestamp": regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]` +
		`|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?` +
		`(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?` +
		`(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`),
}

var resolve11Scanners = map[string]func(string) bool{
	"bool": is11Bool, "float": is11Float, "int": is11Int, "null": is11Null, "timestamp": is11Timestamp,
}

// checkResolve11 fails when a scanner and PyYAML's expression disagree on s.
func checkResolve11(t *testing.T, s string) {
	t.Helper()
	for kind, re := range resolve11Regexps {
		if want, got := re.MatchString(s), resolve11Scanners[kind](s); want != got {
			t.Errorf("%s resolver on %q: PyYAML's expression says %v, the scanner %v", kind, s, want, got)
		}
	}
}

// TestResolve11MatchesRegexps holds every scanner to PyYAML's expression:
// every text of up to four bytes over the bytes the expressions look at,
// the oracle tests' generated corpus, and mutations of valid timestamps
// and base-60 numbers (too long to enumerate).
func TestResolve11MatchesRegexps(t *testing.T) {
	alphabet := []byte("0159_:.-+eExbT Zi")
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		checkResolve11(t, string(prefix))
		if n == 0 || t.Failed() {
			return
		}
		for _, b := range alphabet {
			gen(append(prefix, b), n-1)
		}
	}
	gen(nil, 4)
	pieces := []string{"0", "1", "7", "9", "12", "59", "60", "00", "08", "0x", "0b", "0o", "_", ".", ":", "+", "-",
		"e", "E", "e+", "e-", "inf", "Inf", "INF", "nan", "NaN", "NAN", "x", "F", "a", "yes", "Yes", "no", "On", "off", "true",
		"TRUE", "null", "Null", "~", "T", "t", "Z", " ", "\t", "2001-12-14", "2001-1-4", "1:30.5", "1.5", "99999999999999999999"}
	for _, s := range generatedScalars(27, 40000, 6, pieces) {
		checkResolve11(t, s)
	}
	seeds := []string{"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z",
		"2001-1-4 1:02:03", "2002-12-14\t\t21:59:43 +05:30", "190:20:30.15", "-1:30:59", "+0x_1F", "-0b1_0", "0o17", "685_230.15e+03"}
	mutate := []byte("0123456789:-+. \tTtZ_e")
	for _, seed := range seeds {
		checkResolve11(t, seed)
		for i := 0; i <= len(seed); i++ {
			for _, b := range mutate {
				checkResolve11(t, seed[:i]+string(b)+seed[i:]) // insert
				if i < len(seed) {
					checkResolve11(t, seed[:i]+string(b)+seed[i+1:]) // replace
				}
			}
			if i < len(seed) {
				checkResolve11(t, seed[:i]+seed[i+1:]) // delete
			}
		}
	}
}

// FuzzResolve11 compares the scanners with PyYAML's expressions on any text.
func FuzzResolve11(f *testing.F) {
	for _, s := range []string{"", "1:30.5", "2001-12-14 21:59:43.10 -5", "0x1F", ".inf", "yes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkResolve11(t, s) })
}
