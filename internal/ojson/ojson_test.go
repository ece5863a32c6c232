package ojson

import (
	"errors"
	"math"
	"testing"
)

// The expected strings below were produced by CPython 3.11's json module
// (json.dumps(json.loads(doc), indent=4) and repr(float)), which is what
// NVFlare writes the kit files with.

func TestFormatFloatMatchesPythonRepr(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{30, "30.0"}, {10, "10.0"}, {0.1, "0.1"}, {1e-05, "1e-05"}, {0.0001, "0.0001"},
		{1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {123456789012345678, "1.2345678901234568e+17"},
		{1.5e300, "1.5e+300"}, {math.Copysign(0, -1), "-0.0"}, {2.5, "2.5"}, {1.0 / 3, "0.3333333333333333"},
		{5e-324, "5e-324"}, {1e22, "1e+22"}, {12345.678, "12345.678"}, {0.00012, "0.00012"},
		{9999999999999998, "9999999999999998.0"}, {1e100, "1e+100"}, {100, "100.0"},
		{math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}, {math.NaN(), "NaN"},
	}
	for _, c := range cases {
		if got := formatFloat(c.f); got != c.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestRoundTripMatchesPythonDumps(t *testing.T) {
	cases := []struct{ in, want string }{
		{
			`{"b": 1, "a": [1, 2.50, {}, [], "x\u00e9\ud83d\ude00<>&/", null, true, false], "c": {"z": -0, "y": 1E2, "k": "\ud800"}, "b": "dup"}`,
			"{\n    \"b\": \"dup\",\n    \"a\": [\n        1,\n        2.5,\n        {},\n        [],\n        \"x\\u00e9\\ud83d\\ude00<>&/\",\n        null,\n        true,\n        false\n    ],\n    \"c\": {\n        \"z\": 0,\n        \"y\": 100.0,\n        \"k\": \"\\ud800\"\n    }\n}\n",
		},
		{`[]`, "[]\n"},
		{` {} `, "{}\n"},
		{`"\u007f\u0001\t"`, "\"\\u007f\\u0001\\t\"\n"},
		{`12345678901234567890123`, "12345678901234567890123\n"},
		{`-0.0`, "-0.0\n"},
		{`[1e400, -1e400, NaN]`, "[\n    Infinity,\n    -Infinity,\n    NaN\n]\n"},
		// Raw UTF-8 in the input is escaped on output, as ensure_ascii does.
		{`{"name": "Zürich 😀"}`, "{\n    \"name\": \"Z\\u00fcrich \\ud83d\\ude00\"\n}\n"},
	}
	for _, c := range cases {
		v, err := Parse([]byte(c.in))
		if err != nil {
			t.Fatalf("Parse(%s): %v", c.in, err)
		}
		if got := string(Marshal(v)); got != c.want {
			t.Errorf("Marshal(Parse(%s)) =\n%s\nwant\n%s", c.in, got, c.want)
		}
	}
}

func TestParseRejectsWhatPythonRejects(t *testing.T) {
	cases := []struct {
		in        string
		line, col int
	}{
		{"", 1, 1},
		{"{", 1, 2},
		{`{"a" 1}`, 1, 6},
		{`{"a": 1,}`, 1, 9},
		{`[1 2]`, 1, 4},
		{`01`, 1, 2},
		{"\"a\nb\"", 1, 3},
		{`"\x"`, 1, 2},
		{`{'a': 1}`, 1, 2},
		{"\xef\xbb\xbf{}", 1, 1},
		{"{\n  \"a\": \xff}", 2, 8},
		{`[1] x`, 1, 5},
		{`-`, 1, 2},
		{`1.`, 1, 2},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", c.in, err)
			continue
		}
		if se.Line != c.line || se.Column != c.col {
			t.Errorf("Parse(%q) error at %d:%d (%s), want %d:%d", c.in, se.Line, se.Column, se.Msg, c.line, c.col)
		}
	}
}

func TestParseBoundsNesting(t *testing.T) {
	deep := make([]byte, 0, 4000)
	for range 2000 {
		deep = append(deep, '[')
	}
	if _, err := Parse(deep); err == nil {
		t.Fatal("Parse accepted 2000 nested arrays")
	}
}

func TestEditingKeepsOrder(t *testing.T) {
	v, err := Parse([]byte(`{"z": 1, "a": {"q": 2}, "m": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	v.Set("a", StringValue("replaced")) // keeps its place
	v.Set("new", FloatValue(30))        // appended
	v.SetDefault("m", IntValue(9))      // present: unchanged
	v.SetDefault("d", NewArray())       // absent: appended
	want := "{\n    \"z\": 1,\n    \"a\": \"replaced\",\n    \"m\": 3,\n    \"new\": 30.0,\n    \"d\": []\n}\n"
	if got := string(Marshal(v)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTruthy(t *testing.T) {
	for doc, want := range map[string]bool{
		`null`: false, `false`: false, `0`: false, `0.0`: false, `""`: false, `[]`: false, `{}`: false,
		`true`: true, `1`: true, `-0.5`: true, `"x"`: true, `[0]`: true, `{"a": null}`: true,
		`123456789012345678901234567890`: true,
	} {
		v, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Truthy(); got != want {
			t.Errorf("Truthy(%s) = %v, want %v", doc, got, want)
		}
	}
}

// FuzzParse: Parse never panics, and writing what it read is a fixed
// point (write → parse → write gives the same bytes).
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x"], "b": {"c": null}}`, `"\ud800"`, `[1e400]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		once := Marshal(v)
		again, err := Parse(once)
		if err != nil {
			t.Fatalf("cannot re-read own output %q: %v", once, err)
		}
		if twice := Marshal(again); string(twice) != string(once) {
			t.Fatalf("not a fixed point:\n%s\n%s", once, twice)
		}
	})
}
