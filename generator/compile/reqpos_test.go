package compile

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// requestHeapBound is what reading a launch request of hostileRequestSize
// bytes may allocate in all (so its peak heap is below it): 16 bytes per
// request byte. Issue 25 item 4 asked for a bound of this order.
const (
	hostileRequestSize = 4 << 20
	requestHeapBound   = 64 << 20
)

// hostileMetas are job metas (any job submitter writes one) that made a
// request cost memory quadratic in its size or far beyond it: deep
// nesting (every value carried its whole path: a 200 KB request took
// 1.9 GB), hundreds of thousands of values, keys or repetitions, an error
// in every key of a section. Each fills a request to hostileRequestSize.
func hostileMetas() map[string]string {
	fill := func(unit string, wrap func(string) string) string {
		n := (hostileRequestSize - 2048) / len(unit)
		return wrap(strings.TrimSuffix(strings.Repeat(unit, n), ","))
	}
	deep := func(inner string) string {
		// 990 levels: Python's json.loads, like flare-slurm, refuses
		// 1000 and more.
		key := strings.Repeat("k", (hostileRequestSize-2048)/990-6)
		return strings.Repeat(`{"`+key+`":`, 990) + inner + strings.Repeat("}", 990)
	}
	var keys strings.Builder
	for i := 0; keys.Len() < hostileRequestSize-2048; i++ {
		fmt.Fprintf(&keys, `"k%07d":0,`, i)
	}
	return map[string]string{
		"deep nesting":              `{"deploy_map": ` + deep("0") + `}`,
		"deep nesting in a section": `{"launcher_spec": {"site-1": {"slurm": ` + deep("0") + `}}}`,
		"wide array":                fill("0,", func(s string) string { return `{"deploy_map": [` + s + `]}` }),
		"many keys":                 `{"deploy_map": {` + strings.TrimSuffix(keys.String(), ",") + `}}`,
		"one key repeated":          fill(`"a":0,`, func(s string) string { return `{"deploy_map": {` + s + `}}` }),
		"unknown key in every site": fill(`"s":{"slurm":{"x":1}},`, func(s string) string { return `{"launcher_spec": {` + s + `}}` }),
		"errors in the site's section": `{"launcher_spec": {"site-1": {"slurm": {` +
			strings.TrimSuffix(strings.Repeat(`"gpus":1,`, schema.MaxJobMetaSectionBytes/9-4), ",") + `}}}, "x": "` +
			strings.Repeat("y", hostileRequestSize-schema.MaxJobMetaSectionBytes-4096) + `"}`,
	}
}

// allocated is the number of bytes fn allocates in all: an upper bound of
// the heap it can hold at any moment, and the same on every run.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileRequestMemoryBounded (issue 25 item 4): reading a 4 MiB
// launch request of any of these shapes allocates at most 64 MiB in all,
// and each is answered with its problems (or a plan), every problem with
// a position. Not parallel: the measure is of this process.
func TestHostileRequestMemoryBounded(t *testing.T) {
	f := newFixture(t, "none", "client")
	base := f.Write()
	ws, err := schema.LoadWorkspace(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	for name, meta := range hostileMetas() {
		data := bytes.Replace(base, []byte(`"meta":{}`), []byte(`"meta":`+meta), 1)
		if len(data) < hostileRequestSize-8192 || len(data) > hostileRequestSize+8192 {
			t.Fatalf("%s: request of %d bytes, want about %d", name, len(data), hostileRequestSize)
		}
		n := allocated(func() { _, _, err = ParseAndResolve(ws, "request.json", data, f.environ()) })
		t.Logf("%s: %d bytes read, %.1f MiB allocated", name, len(data), float64(n)/(1<<20))
		if n > requestHeapBound {
			t.Errorf("%s: reading a %d-byte request allocated %d bytes, more than %d", name, len(data), n, requestHeapBound)
		}
		var ps schema.Problems
		if err != nil && !errors.As(err, &ps) {
			t.Errorf("%s: %v", name, err)
		}
		if len(ps) > problem.MaxPerFile+1 {
			t.Errorf("%s: %d problems, at most %d are listed", name, len(ps), problem.MaxPerFile)
		}
		for _, p := range ps {
			if p.Line == 0 && p.Omitted == 0 {
				t.Errorf("%s: problem without a position: %v", name, p)
			}
		}
	}
}
