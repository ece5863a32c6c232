package trust

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Output.ReadFrom (the path os/exec takes) and Write keep the first
// limit bytes and flag the overflow, whatever sizes the reads come in.
func TestOutputReadFrom(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 300) // 4800 bytes
	for _, limit := range []int{0, 1, 511, 512, 513, 4799, 4800, 4801, 1 << 20} {
		for name, r := range map[string]func() io.Reader{
			"whole":    func() io.Reader { return bytes.NewReader(data) },
			"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
			"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
		} {
			want, wantOver := data[:min(limit, len(data))], len(data) > limit
			got := &Output{Limit: limit}
			n, err := got.ReadFrom(r())
			if err != nil || n != int64(len(data)) {
				t.Fatalf("limit %d, %s: ReadFrom = %d, %v", limit, name, n, err)
			}
			if !bytes.Equal(got.Buf, want) || got.Over != wantOver {
				t.Fatalf("limit %d, %s: kept %d bytes over=%v, want %d over=%v", limit, name, len(got.Buf), got.Over, len(want), wantOver)
			}
			w := &Output{Limit: limit}
			for _, p := range [][]byte{data[:100], data[100:]} {
				if n, err := w.Write(p); n != len(p) || err != nil {
					t.Fatalf("limit %d: Write = %d, %v", limit, n, err)
				}
			}
			if !bytes.Equal(w.Buf, want) || w.Over != wantOver {
				t.Fatalf("limit %d: Write kept %d bytes over=%v, want %d over=%v", limit, len(w.Buf), w.Over, len(want), wantOver)
			}
		}
	}
	boom := errors.New("boom")
	got := &Output{Limit: 10}
	if _, err := got.ReadFrom(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))); !errors.Is(err, boom) || string(got.Buf) != "abc" {
		t.Fatalf("read error: %v, kept %q", err, got.Buf)
	}
}
