package schema

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSchemasCompile(t *testing.T) {
	c := compiledSchemas()
	for _, name := range Names() {
		if _, err := c.schema(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.schema("nope"); err == nil {
		t.Error("compiled a schema that is not embedded")
	}
	if got := Names(); !slices.Equal(got, []string{"job-meta", "slurm-config", "study-runtime"}) {
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
