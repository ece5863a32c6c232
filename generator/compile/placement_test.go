package compile

import (
	"errors"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// TestMetaProblemPlacedByAtKey: a meta problem points at the key when it is
// about the key itself (an unknown key, Problem.AtKey), else at the value;
// the words of its message decide nothing (a value that says "unknown" or
// "unsupported" is still pointed at as a value).
func TestMetaProblemPlacedByAtKey(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Write()
	ws, err := schema.LoadWorkspace(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	line := `  "meta": {"launcher_spec": {"site-1": {"slurm": {"gpus": 1, "image": "unknown:unsupported"}}}},`
	data := []byte(`{
  "job_id": "` + f.JobID + `",
  "site": "site-1",
  "role": "client",
  "job_args": {},
` + line + `
  "x": 1
}`)
	_, _, err = ParseAndResolve(ws, "req.json", data, f.environ())
	var ps schema.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v", err)
	}
	col := func(s string) int { return len([]rune(line[:strings.Index(line, s)])) + 1 }
	want := map[string]struct {
		kind   problem.Kind
		column int
	}{
		"meta.launcher_spec.site-1.slurm.gpus":  {problem.Schema, col(`"gpus"`)},                // the key
		"meta.launcher_spec.site-1.slurm.image": {problem.Schema, col(`"unknown:unsupported"`)}, // the value
		"x":                                     {problem.Schema, 3},                            // an unknown request key
	}
	for _, p := range ps {
		w, ok := want[p.Path]
		if !ok {
			continue
		}
		delete(want, p.Path)
		wantLine := 6
		if p.Path == "x" {
			wantLine = 7
		}
		if p.Kind != w.kind || p.Line != wantLine || p.Column != w.column {
			t.Errorf("%s: kind %q at %d:%d, want %q at %d:%d", p, p.Kind, p.Line, p.Column, w.kind, wantLine, w.column)
		}
	}
	for path := range want {
		t.Errorf("no problem at %s in %v", path, ps)
	}
}
