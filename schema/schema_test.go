package schema

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/third_party/jsonschema"
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
		d, err := newEmbedded(name).doc.Get()
		if err != nil {
			t.Fatal(err)
		}
		doc := d.doc
		if _, err := compileDocument(name, d.id, doc, true); err != nil {
			t.Errorf("%s is not a valid JSON Schema 2020-12 document: %v", name, err)
		}
		broken := maps.Clone(doc)
		broken["minProperties"] = "one"
		_, err = compileDocument(name, d.id, broken, true)
		var sve *jsonschema.SchemaValidationError
		if !errors.As(err, &sve) {
			t.Errorf("%s with minProperties \"one\": got %v, want a metaschema validation error", name, err)
		}
	}
}

// TestSchemasDocumented: every property has a description; a default, when
// a property has one, is a value the property accepts (an editor inserts it:
// yaml-language-server wrote `image: "null"` for a `"default": null` on a
// string); an optional property without a default is simply unset. Custom
// messages use the keywords editors understand (defaultMessage): no
// ajv-errors "errorMessage" object, which editors show raw; a
// patternErrorMessage only next to a pattern; x-errorMessages only for
// keywords of the same node. An enum carries its type, or editors skip it
// when they insert an object's required keys.
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
		id, _ := doc["$id"].(string)
		if id == "" {
			t.Errorf("%s: no $id", name)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(noLoader{})
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		count, defaults := 0, 0
		var walk func(pointer string, node any)
		walk = func(pointer string, node any) {
			m, ok := node.(map[string]any)
			if !ok {
				return
			}
			if _, has := m["errorMessage"]; has {
				t.Errorf("%s: %s has an errorMessage; use %s (pattern) or %s", name, pointer, patternMessageKeyword, messagesKeyword)
			}
			if _, has := m[patternMessageKeyword]; has {
				if _, pat := m["pattern"]; !pat {
					t.Errorf("%s: %s has a %s but no pattern", name, pointer, patternMessageKeyword)
				}
			}
			if msgs, has := m[messagesKeyword]; has {
				mm, ok := msgs.(map[string]any)
				if !ok || len(mm) == 0 {
					t.Errorf("%s: %s: %s must be a non-empty object", name, pointer, messagesKeyword)
				}
				for kw := range mm {
					if _, has := m[kw]; !has || kw == "pattern" {
						t.Errorf("%s: %s: %s names %q, not a keyword of this node (a pattern's message is %s)", name, pointer, messagesKeyword, kw, patternMessageKeyword)
					}
				}
			}
			if _, has := m["enum"]; has {
				if _, typed := m["type"]; !typed {
					t.Errorf("%s: %s: an enum without a type", name, pointer)
				}
			}
			if props, ok := m["properties"].(map[string]any); ok {
				for key, p := range props {
					count++
					pm := p.(map[string]any)
					ptr := pointer + "/properties/" + key
					if d, _ := pm["description"].(string); d == "" {
						t.Errorf("%s: %s has no description", name, ptr)
					}
					if def, has := pm["default"]; has && def == nil {
						t.Errorf("%s: %s has \"default\": null; leave the default out (unset), editors insert the text null", name, ptr)
					} else if has {
						defaults++
						sch, err := c.Compile(id + "#" + ptr)
						if err != nil {
							t.Fatalf("%s: compile %s: %v", name, ptr, err)
						}
						if err := sch.Validate(def); err != nil {
							t.Errorf("%s: the default of %s (%v) is not a value it accepts: %v", name, ptr, def, err)
						}
					}
					walk(ptr, p)
				}
			}
			for _, k := range []string{"$defs", "additionalProperties", "items"} {
				switch v := m[k].(type) {
				case map[string]any:
					if k == "$defs" {
						for dk, dv := range v {
							walk(pointer+"/$defs/"+dk, dv)
						}
					} else {
						walk(pointer+"/"+k, v)
					}
				}
			}
		}
		walk("", doc)
		if count < 5 {
			t.Errorf("%s: only %d properties seen", name, count)
		}
		t.Logf("%s: %d properties, %d defaults checked", name, count, defaults)
	}
}

// TestForwardEnvDescription: the editor's hover of forward_env says where
// the values come from: jobs start with sbatch --export=NIL, so not from
// the parent's environment (issue 28 item 7).
func TestForwardEnvDescription(t *testing.T) {
	var doc map[string]any
	src, _ := Source(KindSlurmConfig)
	if err := json.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	jl := doc["properties"].(map[string]any)["job_launcher"].(map[string]any)["properties"].(map[string]any)
	desc, _ := jl["forward_env"].(map[string]any)["description"].(string)
	if !strings.Contains(desc, "--export=NIL") || !strings.Contains(desc, "after setup") || strings.Contains(desc, "Names of parent environment variables") {
		t.Errorf("forward_env's description does not say that values come from setup under --export=NIL: %q", desc)
	}
}

// TestForgetStartsOver: Forget drops every decoded and compiled schema;
// the next validation compiles again, into a new schema, and still works.
func TestForgetStartsOver(t *testing.T) {
	docBefore, before, err := schemaByName(KindSlurmConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, again, _ := schemaByName(KindSlurmConfig); again != before {
		t.Fatal("a second use compiled the schema again before any Forget")
	}
	Forget()
	docAfter, after, err := schemaByName(KindSlurmConfig)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Error("the schema compiled before Forget is still the one in use after it")
	}
	if reflect.ValueOf(docAfter.doc).Pointer() == reflect.ValueOf(docBefore.doc).Pointer() {
		t.Error("the schema document decoded before Forget is still the one in use after it")
	}
	if err := after.Validate(map[string]any{}); err == nil {
		t.Error("the schema compiled after Forget accepts an empty slurm.yaml")
	}
}
