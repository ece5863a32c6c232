package ojson

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParseOffsets: every parsed value knows where it starts, Locate
// finds where a key starts, and Position counts columns in characters, as
// editors do.
func TestParseOffsets(t *testing.T) {
	data := []byte("{\n  \"é\": \"ü\", \"k\": [1, {\"x\": null}]\n}")
	v, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	keyAt := func(path string) int { k, _, _ := Locate(data, path); return k }
	at := func(offset int) string {
		l, c := Position(data, offset)
		return fmt.Sprintf("%d:%d", l, c)
	}
	for _, tc := range []struct {
		what string
		got  int
		want string
	}{
		{"document", v.Offset, "1:1"},
		{"key é", keyAt("é"), "2:3"},
		{"value ü (after a two-byte key)", v.Get("é").Offset, "2:8"},
		{"key k", keyAt("k"), "2:13"},
		{"array", v.Get("k").Offset, "2:18"},
		{"x's null", v.Get("k").Items[1].Get("x").Offset, "2:28"},
	} {
		if got := at(tc.got); got != tc.want {
			t.Errorf("%s at %s, want %s", tc.what, got, tc.want)
		}
	}
	if _, err := Parse([]byte("{\"ü\": }")); err == nil || err.(*SyntaxError).Column != 7 {
		t.Errorf("syntax error column: %v, want 7 (characters, not bytes)", err)
	}
}

// TestParseRepeatedKeys: a repeated key keeps its first position and its
// last value (Scan reports the repetition).
func TestParseRepeatedKeys(t *testing.T) {
	v, err := Parse([]byte(`{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if v.Get("a").Num != "3" || v.Members[0].Key != "a" || v.Get("b").Get("c").Num != "2" {
		t.Errorf("values: %s", Marshal(v))
	}
}

// manyKeys is one JSON object of n distinct keys, then the first key again.
func manyKeys(n int) []byte {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"k%d": %d, `, i, i)
	}
	b.WriteString(`"k0": -1}`)
	return []byte(b.String())
}

// TestDuplicateKeysLinear (issue 25 item 5): finding repeated keys took a
// linear search per key, 5.9 s for 80,000 keys and more than a minute for
// 300,000. 500,000 keys now parse well inside a budget the quadratic
// search overruns many times (BenchmarkParseManyKeys has the figures; the
// budget only stops a regression from hanging the suite).
func TestDuplicateKeysLinear(t *testing.T) {
	data := manyKeys(500_000)
	done := make(chan error, 1)
	go func() {
		v, err := Parse(data)
		if err == nil && (len(v.Members) != 500_000 || v.Get("k0").Num != "-1") {
			err = fmt.Errorf("%d members, k0 %s", len(v.Members), v.Get("k0").Num)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("500,000 keys did not parse within 60 s: duplicate detection is not linear")
	}
}

func BenchmarkParseManyKeys(b *testing.B) {
	for _, n := range []int{80_000, 300_000} {
		data := manyKeys(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScan: Scan reads JSON as Parse does, lists repeated keys with their
// paths, and keeps at most the limit.
func TestScan(t *testing.T) {
	data := []byte(`{"a": 1, "b": {"c": [1, {"d": 1, "d": 2, "\u0064": 3}], "c": 0}, "a": 3, "x.y": {"z": 1, "z": 2}}`)
	r, err := Scan(data, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range r.Duplicates {
		_, col := Position(data, d.KeyOffset)
		_, first := Position(data, d.FirstOffset)
		got = append(got, fmt.Sprintf("%s@%d(first %d)", d.Path, col, first))
	}
	want := "b.c[1].d@34(first 26) b.c[1].d@42(first 26) b.c@57(first 16) a@66(first 2) x.y.z@90(first 82)"
	if strings.Join(got, " ") != want || r.More != 0 {
		t.Errorf("duplicates %s (more %d), want %s", strings.Join(got, " "), r.More, want)
	}
	if r, _ := Scan(data, 2, nil); len(r.Duplicates) != 2 || r.More != 3 {
		t.Errorf("limit 2: %+v", r)
	}
	for _, bad := range []string{`{"a": 1,}`, `{'a': 1}`, `{a: 1}`, `{"a": 1} // c`, "{\"a\": \"x\ny\"}", `[1 2]`, "\xef\xbb\xbf{}", strings.Repeat("[", 1002) + strings.Repeat("]", 1002)} {
		_, serr := Scan([]byte(bad), 10, nil)
		_, perr := Parse([]byte(bad))
		if serr == nil || perr == nil || serr.Error() != perr.Error() {
			t.Errorf("%q: Scan %v, Parse %v: want the same syntax error", bad, serr, perr)
		}
	}
	if _, err := Scan([]byte(`{"n": NaN, "i": -Infinity, "s": "\ud800"}`), 1, nil); err != nil {
		t.Errorf("Python's reading: %v", err)
	}
}

// TestScanManyRepetitionsLinear: one key repeated 500,000 times is a
// linear scan too (a comparison with every earlier repetition would not be).
func TestScanManyRepetitionsLinear(t *testing.T) {
	data := []byte("{" + strings.Repeat(`"a": 0, `, 500_000) + `"a": 1}`)
	done := make(chan ScanResult, 1)
	go func() { r, _ := Scan(data, 100, nil); done <- r }()
	select {
	case r := <-done:
		if len(r.Duplicates) != 100 || r.More != 500_000-100 {
			t.Errorf("%d duplicates listed, %d more", len(r.Duplicates), r.More)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("500,000 repetitions of one key did not scan within 60 s")
	}
}

// TestScanAllocatesPerKeyNotPerValue: scanning a 4 MiB array of numbers
// allocates almost nothing (Parse builds a value per number).
func TestScanAllocatesPerKeyNotPerValue(t *testing.T) {
	data := []byte("[" + strings.Repeat("0,", 2<<20) + "0]")
	allocs := testing.AllocsPerRun(1, func() {
		if _, err := Scan(data, 100, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 100 {
		t.Errorf("Scan of 2 Mi numbers made %.0f allocations", allocs)
	}
}

// TestLocate: Locate finds keys and values by dotted path, keys holding a
// '.' included, the first of repeated keys, and array items.
func TestLocate(t *testing.T) {
	data := []byte(`{"a": {"b": [10, {"c": "x"}]}, "s.t": {"u": 1}, "s": {"t.u": 2}, "d": 1, "d": 2}`)
	for _, c := range []struct{ path, key, value string }{
		{"", "", `{"a"`},
		{"a", `"a"`, `{"b"`},
		{"a.b[1].c", `"c"`, `"x"`},
		{"a.b[0]", "", `10`},
		{"s.t.u", `"u"`, `1}`},
		{"d", `"d"`, `1, "d"`},
	} {
		k, v, ok := Locate(data, c.path)
		if !ok {
			t.Errorf("%q not found", c.path)
			continue
		}
		gotKey := ""
		if k >= 0 {
			gotKey = string(data[k : k+len(c.key)])
		}
		if gotKey != c.key || !strings.HasPrefix(string(data[v:]), c.value) {
			t.Errorf("%q: key %q value %q", c.path, gotKey, data[v:min(v+8, len(data))])
		}
	}
	for _, missing := range []string{"x", "a.b[5]", "a.c", "d.e"} {
		if _, _, ok := Locate(data, missing); ok {
			t.Errorf("%q found", missing)
		}
	}
}

// TestScanSpans: Scan tells its visitor where every member and item is,
// each when it ends (after what it holds), and where the document is;
// Each tells only the members of one value.
func TestScanSpans(t *testing.T) {
	data := []byte(` {"a": [1, {"b": "x"}], "c" : 2 } `)
	var got []string
	r, err := Scan(data, 10, func(s Span) {
		key := ""
		if s.KeyOffset >= 0 {
			key = KeyText(data, s.KeyOffset)
		}
		got = append(got, fmt.Sprintf("%d %q@%d %s comma %d", s.Depth, key, s.Parent, data[s.Offset:s.End], s.Comma))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`2 ""@2 1 comma 9`,
		`3 "b"@-1 "x" comma -1`, // its parent is an item
		`2 ""@2 {"b": "x"} comma -1`,
		`1 "a"@-1 [1, {"b": "x"}] comma 22`,
		`1 "c"@-1 2 comma -1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("spans:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if root := data[r.Root.Offset:r.Root.End]; string(root) != string(data[1:len(data)-1]) {
		t.Errorf("root %q", root)
	}
	var keys []string
	Each(data, 1, func(s Span) bool { keys = append(keys, KeyText(data, s.KeyOffset)); return false })
	if strings.Join(keys, " ") != "a" {
		t.Errorf("Each stopped after %q", keys)
	}
}
