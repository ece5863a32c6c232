package scheduler

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// capWriter.ReadFrom (the path os/exec takes) keeps the same bytes and
// overflow flag as Write, whatever sizes the reads come in.
func TestCapWriterReadFrom(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 300) // 4800 bytes
	for _, limit := range []int{0, 1, 511, 512, 513, 4799, 4800, 4801, 1 << 20} {
		for name, r := range map[string]func() io.Reader{
			"whole":    func() io.Reader { return bytes.NewReader(data) },
			"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
			"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
		} {
			var want capWriter
			want.limit = limit
			want.Write(data)
			got := &capWriter{limit: limit}
			n, err := got.ReadFrom(r())
			if err != nil || n != int64(len(data)) {
				t.Fatalf("limit %d, %s: ReadFrom = %d, %v", limit, name, n, err)
			}
			if !bytes.Equal(got.buf, want.buf) || got.over != want.over || len(got.buf) > limit {
				t.Fatalf("limit %d, %s: kept %d bytes over=%v, Write keeps %d over=%v", limit, name, len(got.buf), got.over, len(want.buf), want.over)
			}
		}
	}
	boom := errors.New("boom")
	got := &capWriter{limit: 10}
	if _, err := got.ReadFrom(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))); !errors.Is(err, boom) || string(got.buf) != "abc" {
		t.Fatalf("read error: %v, kept %q", err, got.buf)
	}
}
