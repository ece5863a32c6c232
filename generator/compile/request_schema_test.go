package compile

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"

	"github.com/flare-slurm/flare-slurm/schema"
)

// requestSchema decodes the embedded launch-request schema.
func requestSchema(t *testing.T) map[string]any {
	t.Helper()
	src, ok := schema.Source(schema.SchemaLaunchRequest)
	if !ok {
		t.Fatalf("no embedded schema %s", schema.SchemaLaunchRequest)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc.(map[string]any)
}

// TestRequestSchemaNamesTheParsersFields: the schema's keys are the ones
// parseRequest reads, its job_args the argument names of both roles and
// the credentials, so the schema cannot drift from the parser.
func TestRequestSchemaNamesTheParsersFields(t *testing.T) {
	doc := requestSchema(t)
	props := doc["properties"].(map[string]any)
	if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, slices.Sorted(slices.Values(requestKeys))) {
		t.Errorf("schema properties %q, parser reads %q", got, requestKeys)
	}
	want := map[string]bool{}
	for _, n := range append(append([]string{}, clientArgOrder...), serverArgOrder...) {
		want[n] = true
	}
	for _, c := range credentialArgs {
		want[c.Arg] = true
	}
	args := props["job_args"].(map[string]any)["properties"].(map[string]any)
	if got, w := slices.Sorted(maps.Keys(args)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
		t.Errorf("schema job_args %q, parser accepts %q", got, w)
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
	data, err := os.ReadFile("../../examples/request.json")
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
	if _, err := ParseRequest("examples/request.json", data); err != nil {
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
		if _, err := ParseRequest("r.json", []byte(bad)); err == nil {
			t.Errorf("%s: the parser accepts %s", name, bad)
		}
	}
}
