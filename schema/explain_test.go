package schema

import (
	"errors"
	"strings"
	"testing"
)

// TestExplainEveryKey: every key of every schema, to any depth, can be
// explained and has a description (issue 28 item 13).
func TestExplainEveryKey(t *testing.T) {
	for _, name := range explainOrder {
		seen := 0
		var walk func(path string, depth int)
		walk = func(path string, depth int) {
			x, err := Explain(name, path)
			if err != nil {
				t.Fatalf("%s %q: %v", name, path, err)
			}
			if path != "" && x.Description == "" {
				t.Errorf("%s %s: no description", name, path)
			}
			seen++
			if depth > 6 {
				return
			}
			for _, f := range x.Fields {
				walk(joinPath(path, f.Name), depth+1)
			}
			// a mapping of names (studies, env, sites): any name
			if len(x.Fields) == 0 && strings.Contains(x.Type, "object") {
				if _, err := Explain(name, joinPath(path, "*")); err == nil {
					walk(joinPath(path, "*"), depth+1)
				}
			}
		}
		walk("", 0)
		if seen < 4 {
			t.Errorf("%s: only %d keys explained", name, seen)
		}
	}
}

func TestExplainUnknownKeySuggests(t *testing.T) {
	_, err := Explain("", "job_launcher.pyhton_path")
	var nk *ErrNoKey
	if !errors.As(err, &nk) || nk.Schema != KindSlurmConfig || !strings.Contains(nk.Suggestion, "python_path") {
		t.Fatalf("err = %#v", err)
	}
	x, err := Explain("", "study-runtime.studies.*.env")
	if err != nil || x.Schema != KindStudyRuntime || x.Type == "" {
		t.Fatalf("schema prefix and a wildcard name: %+v %v", x, err)
	}
}
