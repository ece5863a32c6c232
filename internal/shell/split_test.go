package shell

import (
	"errors"
	"math/rand"
	"reflect"
	"testing"
)

// TestSplitMatchesShlex pins Split against results of Python's
// shlex.split (POSIX mode) for the same inputs.
func TestSplitMatchesShlex(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"  ", []string{}},
		{"a b  c", []string{"a", "b", "c"}},
		{"--set secure_train=true uid=site-1 config_folder=config", []string{"--set", "secure_train=true", "uid=site-1", "config_folder=config"}},
		{`'a b' "c d"`, []string{"a b", "c d"}},
		{`a'b'c`, []string{"abc"}},
		{`"a\"b"`, []string{`a"b`}},
		{`"a\b"`, []string{`a\b`}},
		{`"a\\b"`, []string{`a\b`}},
		{`a\ b`, []string{"a b"}},
		{"a\\\nb", []string{"a\nb"}},
		{`''`, []string{""}},
		{`""`, []string{""}},
		{`x '' y`, []string{"x", "", "y"}},
		{"#c d", []string{"#c", "d"}},
		{"a\tb\rc\nd", []string{"a", "b", "c", "d"}},
		{`'it'"'"'s'`, []string{"it's"}},
		{"\"$(id)\" `x`", []string{"$(id)", "`x`"}},
		{`\'`, []string{"'"}},
		{"é ü", []string{"é", "ü"}},
	}
	for _, c := range cases {
		got, err := Split(c.in)
		if err != nil {
			t.Errorf("Split(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplitErrors(t *testing.T) {
	cases := map[string]error{
		`'abc`:  errUnclosedQuote,
		`"abc`:  errUnclosedQuote,
		`abc\`:  errTrailingEscape,
		`"abc\`: errTrailingEscape,
		`a "b`:  errUnclosedQuote,
	}
	for in, want := range cases {
		if _, err := Split(in); !errors.Is(err, want) {
			t.Errorf("Split(%q) error = %v, want %v", in, err, want)
		}
	}
}

// TestSplitInvertsJoin: every list of words survives Join then Split.
func TestSplitInvertsJoin(t *testing.T) {
	seed := int64(20261202)
	rng := rand.New(rand.NewSource(seed))
	alphabet := []string{"a", "Z", "0", " ", "\t", "\n", "'", `"`, `\`, "$", "(", ")", "`", "*", "?", "[", "-", "=", "é", "😀", "#", "~", ";", "&", "|", ""}
	n := 5000
	if testing.Short() {
		n = 500
	}
	for i := 0; i < n; i++ {
		words := make([]string, rng.Intn(5))
		for j := range words {
			var w []byte
			for k := rng.Intn(8); k > 0; k-- {
				w = append(w, alphabet[rng.Intn(len(alphabet))]...)
			}
			words[j] = string(w)
		}
		got, err := Split(Join(words))
		if err != nil {
			t.Fatalf("seed %d case %d: Split(Join(%q)): %v", seed, i, words, err)
		}
		if !reflect.DeepEqual(got, words) {
			t.Fatalf("seed %d case %d: Split(Join(%q)) = %q", seed, i, words, got)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "a 'b c' \"d\\\"e\"", `x\`, "'", "--set a=1 b=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
		if err != nil {
			return
		}
		again, err := Split(Join(words))
		if err != nil || !reflect.DeepEqual(again, words) {
			t.Fatalf("Split(Join(Split(%q))) = %q, %v; want %q", s, again, err, words)
		}
	})
}
