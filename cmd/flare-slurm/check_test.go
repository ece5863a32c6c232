package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckUsage: check's flag errors are usage errors (exit 2, code
// usage) that name what is allowed, found before the workspace is opened
// or anything is submitted.
func TestCheckUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--workspace", "/nonexistent", "--only", "sucess"}, `unknown probe "sucess" (probes: bootstrap, success, failure,`},
		{[]string{"check", "--workspace", "/nonexistent", "--skip", "bogus"}, `unknown probe "bogus"`},
		{[]string{"check", "--workspace", "/nonexistent", "--only", "timeout", "--skip", "timeout"}, "no probe is left to run"},
		{[]string{"check", "--workspace", "/nonexistent", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"check", "--workspace", "/nonexistent", "--timeout", "soon"}, `invalid argument "soon"`},
		{[]string{"check", "--workspace", "/nonexistent", "--gpus", "-1"}, "--gpus must be 0 or more"},
		{[]string{"check", "--workspace", "/nonexistent", "--nodes", "-2"}, "--nodes must be 0 or more"},
		{[]string{"check"}, "--workspace is required"},
	} {
		var out, errb bytes.Buffer
		code := Main(append([]string{"check", "--json"}, c.args[1:]...), strings.NewReader(""), &out, &errb)
		// A flag that does not parse stops cobra before --json is read.
		doc := struct{ Error cliError }{Error: cliError{Code: "usage", Message: errb.String()}}
		if out.Len() > 0 {
			_ = json.Unmarshal(out.Bytes(), &doc)
		}
		if code != exitUsage || doc.Error.Code != "usage" || !strings.Contains(doc.Error.Message, c.want) {
			t.Errorf("%v: exit %d, stdout %s stderr %s; want exit 2 with %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

// TestCheckRefusesAnUnwritableJUnitFirst: a --junit path that cannot be
// written is refused before any probe runs (a review found a 15-minute
// run's results lost when the report failed after it).
func TestCheckRefusesAnUnwritableJUnitFirst(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"check", "--json", "--workspace", "/nonexistent-workspace", "--junit", "/nonexistent-dir/report.xml"}, strings.NewReader(""), &out, &errb)
	var doc struct{ Error cliError }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	if code != exitFailure || doc.Error.Code != "invalid_output" || !strings.Contains(doc.Error.Message, "--junit /nonexistent-dir/report.xml cannot be written") {
		t.Errorf("exit %d, %+v; want exit 1, invalid_output about --junit (not the workspace, which is checked after)", code, doc.Error)
	}
}
