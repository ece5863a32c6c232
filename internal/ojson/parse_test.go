package ojson

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParseOffsets: every parsed value and key knows where it starts, and
// Position counts columns in characters, as editors do.
func TestParseOffsets(t *testing.T) {
	data := []byte("{\n  \"é\": \"ü\", \"k\": [1, {\"x\": null}]\n}")
	v, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
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
		{"key é", v.Members[0].KeyOffset, "2:3"},
		{"value ü (after a two-byte key)", v.Get("é").Offset, "2:8"},
		{"key k", v.Members[1].KeyOffset, "2:13"},
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

// TestParseReportingDuplicates: a repeated key keeps its first position and
// its last value, and is reported at its repetition, in document order.
func TestParseReportingDuplicates(t *testing.T) {
	data := []byte(`{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}`)
	v, dups, err := ParseReportingDuplicates(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(dups) != 2 || dups[0].Key != "c" || dups[0].Object != v.Get("b") || dups[1].Key != "a" || dups[1].Object != v {
		t.Fatalf("duplicates %+v", dups)
	}
	if _, col := Position(data, dups[0].KeyOffset); col != 24 {
		t.Errorf("the repeated c is at column %d, want 24", col)
	}
	if v.Get("a").Num != "3" || v.Members[0].Key != "a" || v.Get("b").Get("c").Num != "2" {
		t.Errorf("values: %s", Marshal(v))
	}
	if _, dups, _ := ParseReportingDuplicates([]byte(`{"a": 1}`)); dups != nil {
		t.Errorf("no duplicates: got %+v", dups)
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
		v, dups, err := ParseReportingDuplicates(data)
		if err == nil && (len(dups) != 1 || dups[0].Key != "k0" || len(v.Members) != 500_000 || v.Get("k0").Num != "-1") {
			err = fmt.Errorf("duplicates %+v, %d members", dups, len(v.Members))
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
				if _, _, err := ParseReportingDuplicates(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
