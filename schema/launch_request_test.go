package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"
)

// requestSchema decodes the embedded launch-request schema.
func requestSchema(t *testing.T) map[string]any {
	t.Helper()
	src, ok := Source(schemaLaunchRequest)
	if !ok {
		t.Fatalf("no embedded schema %s", schemaLaunchRequest)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc.(map[string]any)
}

// TestRequestSchemaNamesTheGoConstants: the schema's keys are
// launchRequestKeys, its job_args the argument names of both roles and the
// credentials, its job ID pattern jobIDPattern and its roles the two the
// Go code knows, so the schema cannot drift from the code that applies it.
func TestRequestSchemaNamesTheGoConstants(t *testing.T) {
	doc := requestSchema(t)
	props := doc["properties"].(map[string]any)
	if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, slices.Sorted(slices.Values(launchRequestKeys))) {
		t.Errorf("schema properties %q, parser reads %q", got, launchRequestKeys)
	}
	want := map[string]bool{}
	for _, n := range append(append([]string{}, clientJobArgs...), serverJobArgs...) {
		want[n] = true
	}
	for _, c := range CredentialJobArgs {
		want[c.Arg] = true
	}
	args := props["job_args"].(map[string]any)["properties"].(map[string]any)
	if got, w := slices.Sorted(maps.Keys(args)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
		t.Errorf("schema job_args %q, parser accepts %q", got, w)
	}
	if p := props["job_id"].(map[string]any)["pattern"]; p != jobIDPattern {
		t.Errorf("schema job_id pattern %q, Go %q", p, jobIDPattern)
	}
	if e := fmt.Sprint(props["role"].(map[string]any)["enum"]); e != "[client server]" {
		t.Errorf("schema roles %s", e)
	}
}

// TestExampleRequest: examples/request.json is valid under the schema and
// parses without problems; requests the parser refuses for their shape
// are refused by the schema too.
func TestExampleRequest(t *testing.T) {
	c := jsonschema.NewCompiler()
	doc := requestSchema(t)
	id := doc["$id"].(string)
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../examples/request.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("examples/request.json: %v", err)
	}
	if _, err := ParseLaunchRequest("examples/request.json", data, ""); err != nil {
		t.Errorf("examples/request.json: %v", err)
	}
	for name, bad := range map[string]string{
		"no job_args":   `{"job_id": "j", "site": "s", "role": "client"}`,
		"unknown key":   `{"job_id": "j", "site": "s", "role": "client", "job_args": {}, "extra": 1}`,
		"unknown arg":   `{"job_id": "j", "site": "s", "role": "client", "job_args": {"nope": ["-x", "1"]}}`,
		"three items":   `{"job_id": "j", "site": "s", "role": "client", "job_args": {"workspace": ["-m", "/w", "x"]}}`,
		"empty flag":    `{"job_id": "j", "site": "s", "role": "client", "job_args": {"workspace": ["", "/w"]}}`,
		"bad role":      `{"job_id": "j", "site": "s", "role": "admin", "job_args": {}}`,
		"bad job id":    `{"job_id": "../x", "site": "s", "role": "client", "job_args": {}}`,
		"meta not dict": `{"job_id": "j", "site": "s", "role": "client", "meta": [], "job_args": {}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if sch.Validate(v) == nil {
			t.Errorf("%s: the schema accepts %s", name, bad)
		}
		if _, err := ParseLaunchRequest("r.json", []byte(bad), ""); err == nil {
			t.Errorf("%s: the parser accepts %s", name, bad)
		}
	}
}

// TestLaunchRequestProblems: each rule of a request says what is wrong at
// the field's position, one problem per job argument however many of its
// items are wrong, and a request with a million keys it does not know
// lists at most problem.MaxPerFile of them.
func TestLaunchRequestProblems(t *testing.T) {
	data := []byte(`{"job_id": "startup", "site": "a|b", "role": "client", "job_args": {` +
		`"workspace": ["", "/w"], "target": ["-t"], "scheme": ["-s", 1, 2], "root_url": ["-r", "x"], "job_id": ["-n", "other"]}}`)
	r, ps := ParseLaunchRequest("r.json", data, "")
	got := map[string]string{}
	for _, p := range ps {
		if _, dup := got[p.Path]; dup {
			t.Errorf("two problems at %s: %s and %s", p.Path, got[p.Path], p)
		}
		got[p.Path] = p.String()
	}
	for path, want := range map[string]string{
		"job_id":             `r.json:1:12: job_id: "startup" names a directory of the workspace`,
		"site":               `r.json:1:31: site: site name "a|b" holds '|' at character 2 (allowed: `,
		"job_args.workspace": `r.json:1:82: job_args.workspace: has an empty flag`,
		"job_args.target":    `r.json:1:104: job_args.target: must be a [flag, value] pair of two strings`,
		"job_args.scheme":    `r.json:1:122: job_args.scheme: must be a [flag, value] pair of two strings`,
		"job_args.root_url":  `r.json:1:136: job_args.root_url: is not a client job argument (allowed: workspace, startup_dir`,
	} {
		if !strings.HasPrefix(got[path], want) {
			t.Errorf("%s:\n got %q\nwant %q…", path, got[path], want)
		}
	}
	if _, ok := got["job_args.job_id"]; ok {
		t.Errorf("job_args.job_id compared with a refused job_id: %s", got["job_args.job_id"])
	}
	if r == nil || r.JobID != "" || r.Site != "" || r.Role != "client" || len(r.JobArgs) != 1 || !r.Invalid ||
		!r.Refused("job_args.scheme") || r.Refused("job_args.job_id") || r.JobArgs["job_id"][1] != "other" {
		t.Errorf("decoded %+v", r)
	}

	var b strings.Builder
	b.WriteString(`{"job_id": "j", "site": "s", "role": "client", "job_args": {`)
	for i := range 200_000 {
		fmt.Fprintf(&b, `"k%d": [], `, i)
	}
	b.WriteString(`"options": ["-o", "x"]}}`)
	r, ps = ParseLaunchRequest("r.json", []byte(b.String()), "")
	if len(ps) != problem.MaxPerFile+1 || ps[len(ps)-1].Omitted != 200_000-problem.MaxPerFile || r.JobArgs["options"][1] != "x" {
		t.Errorf("%d problems, the last %v; job args %v", len(ps), ps[len(ps)-1], r.JobArgs)
	}

	// A wide list where a string or a pair belongs costs no tree.
	wide := "[" + strings.Repeat("0,", 1<<19) + "0]"
	data = []byte(`{"job_id": "j", "site": ` + wide + `, "role": "client", "job_args": {"options": ` + wide + `}}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, ps = ParseLaunchRequest("r.json", data, "")
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16*uint64(len(data)) {
		t.Errorf("a %d-byte request allocated %d bytes", len(data), n)
	}
	if len(ps) != 2 || ps[0].Message != "must be a string, not a JSON array" || ps[1].Message != "must be a [flag, value] pair of two strings" {
		t.Errorf("wide lists: %v", ps)
	}
}
