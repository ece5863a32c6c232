package schema

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileAll compiles every embedded schema (benchmarks exclude that
// one-time cost from their loops).
func compileAll(t testing.TB) {
	t.Helper()
	for _, name := range Names() {
		if _, _, err := schemaByName(name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSchemasCompile(t *testing.T) {
	compileAll(t)
	if _, _, err := schemaByName("nope"); err == nil {
		t.Error("compiled a schema that is not embedded")
	}
	if got := slices.Sorted(maps.Keys(embeddedSchemas)); !slices.Equal(got, Names()) {
		t.Errorf("embeddedSchemas holds %q, Names() is %q", got, Names())
	}
	if got := Names(); !slices.Equal(got, []string{"job-meta", "launch-request", "slurm-config", "study-runtime"}) {
		t.Errorf("Names() = %q", got)
	}
	if _, ok := Source("nope"); ok {
		t.Error("Source of an unknown name")
	}
	for _, name := range Names() {
		if Title(name) == "" {
			t.Errorf("%s has no title", name)
		}
	}
}

// The program compiles the embedded schemas without validating them against
// the JSON Schema 2020-12 metaschema (that would compile the metaschema in
// every process); this test does it instead, and shows that it would catch
// a schema that breaks the metaschema.
func TestSchemasValidAgainstMetaschema(t *testing.T) {
	for _, name := range Names() {
		e := &embedded{name: name}
		doc, err := e.load()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compileDocument(name, e.id, doc, true); err != nil {
			t.Errorf("%s is not a valid JSON Schema 2020-12 document: %v", name, err)
		}
		broken := maps.Clone(doc)
		broken["minProperties"] = "one"
		_, err = compileDocument(name, e.id, broken, true)
		var sve *jsonschema.SchemaValidationError
		if !errors.As(err, &sve) {
			t.Errorf("%s with minProperties \"one\": got %v, want a metaschema validation error", name, err)
		}
	}
}

// TestSchemasDocumented: every property has a description, and every
// optional one its default, so editors complete and document them.
func TestSchemasDocumented(t *testing.T) {
	for _, name := range Names() {
		src, ok := Source(name)
		if !ok {
			t.Fatalf("no source for %s", name)
		}
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema = %v", name, doc["$schema"])
		}
		if id, _ := doc["$id"].(string); id == "" {
			t.Errorf("%s: no $id", name)
		}
		count := 0
		var walk func(path string, node any)
		walk = func(path string, node any) {
			m, ok := node.(map[string]any)
			if !ok {
				return
			}
			required := map[string]bool{}
			if req, ok := m["required"].([]any); ok {
				for _, r := range req {
					required[r.(string)] = true
				}
			}
			if props, ok := m["properties"].(map[string]any); ok {
				for key, p := range props {
					count++
					pm := p.(map[string]any)
					if d, _ := pm["description"].(string); d == "" {
						t.Errorf("%s: %s.%s has no description", name, path, key)
					}
					if _, has := pm["default"]; !has && !required[key] {
						t.Errorf("%s: optional %s.%s has no default", name, path, key)
					}
					walk(path+"."+key, p)
				}
			}
			for _, k := range []string{"$defs", "additionalProperties", "items"} {
				switch v := m[k].(type) {
				case map[string]any:
					if k == "$defs" {
						for dk, dv := range v {
							walk(path+".$defs."+dk, dv)
						}
					} else {
						walk(path+"."+k, v)
					}
				}
			}
		}
		walk(name, doc)
		if count < 5 {
			t.Errorf("%s: only %d properties seen", name, count)
		}
	}
}
