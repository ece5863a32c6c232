package prepare

import (
	"path/filepath"
	"strings"
	"testing"
)

// A workspace prepared as root is root's: prepare says so and what to do
// (contract §4.8 wants it owned by the runtime account).
func TestRootPrepareWarns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "ws")
	f.asUID(0)
	res := f.run(t, out)
	var got []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "owned by root") {
			got = append(got, w)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], out) || !strings.Contains(got[0], "chown -R ACCOUNT "+out) ||
		!strings.Contains(got[0], "run prepare as that account") {
		t.Errorf("warnings %q, want one naming %s with the chown hint", res.Warnings, out)
	}
	f.asUID(1000)
	res = f.run(t, out)
	for _, w := range res.Warnings {
		if strings.Contains(w, "root") {
			t.Errorf("warning %q for a prepare not run as root", w)
		}
	}
}
