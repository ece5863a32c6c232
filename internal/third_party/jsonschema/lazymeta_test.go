package jsonschema

// Tests of the flare-slurm patch (PATCHED.md): metaschemas compiled on first
// use instead of at package init, and Compiler.SkipMetaschemaValidation.

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var allDrafts = []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020}

// compiledDrafts lists the drafts whose metaschema has been compiled.
func compiledDrafts() []int {
	var v []int
	for _, d := range allDrafts {
		if d.sch != nil {
			v = append(v, d.version)
		}
	}
	return v
}

// inFreshProcess runs the test named name alone in a new process of this
// test binary (state right after package init) and fails t with its output
// when it fails.
func inFreshProcess(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("JSONSCHEMA_FRESH_PROCESS") == name {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JSONSCHEMA_FRESH_PROCESS="+name)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%s in a fresh process: %v\n%s", name, err, out)
	}
	return false
}

func TestMetaschemasNotCompiledAtInit(t *testing.T) {
	if !inFreshProcess(t, "TestMetaschemasNotCompiledAtInit") {
		return
	}
	if v := compiledDrafts(); len(v) != 0 {
		t.Fatalf("metaschemas of drafts %v were compiled at package init", v)
	}
}

// A schema compiled without the option is validated against its draft's
// metaschema, which is compiled then, and only that draft's.
func TestMetaschemaCompiledOnFirstUse(t *testing.T) {
	if !inFreshProcess(t, "TestMetaschemaCompiledOnFirstUse") {
		return
	}
	c := NewCompiler()
	if err := c.AddResource("mem://bad.json", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "minLength": "x"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Compile("mem://bad.json")
	var sve *SchemaValidationError
	if !errors.As(err, &sve) {
		t.Fatalf("invalid schema: got %v, want a SchemaValidationError", err)
	}
	if v := compiledDrafts(); len(v) != 1 || v[0] != 7 {
		t.Fatalf("compiled metaschemas %v, want only draft 7's", v)
	}
	if Draft7.vocabSchemas == nil {
		t.Fatal("draft 7's vocabulary map was not set with its metaschema")
	}
}

// With SkipMetaschemaValidation a valid schema compiles and validates
// without any metaschema being compiled, and an invalid one is not checked.
func TestSkipMetaschemaValidation(t *testing.T) {
	if !inFreshProcess(t, "TestSkipMetaschemaValidation") {
		return
	}
	c := NewCompiler()
	c.SkipMetaschemaValidation()
	doc := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": 1}},
	}
	if err := c.AddResource("mem://ok.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://ok.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(map[string]any{"n": 2}); err != nil {
		t.Fatalf("valid instance: %v", err)
	}
	if err := sch.Validate(map[string]any{"n": 0}); err == nil {
		t.Fatal("n: 0 passed minimum 1")
	}
	if err := c.AddResource("mem://bad.json", map[string]any{"minLength": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("mem://bad.json"); err != nil {
		t.Fatalf("with the option the metaschema is not consulted, got %v", err)
	}
	if v := compiledDrafts(); len(v) != 0 {
		t.Fatalf("metaschemas of drafts %v were compiled although validation was skipped", v)
	}
}

// Many goroutines reaching the metaschemas at once each get the same
// compiled schema (run with -race).
func TestMetaschemaConcurrentFirstUse(t *testing.T) {
	if !inFreshProcess(t, "TestMetaschemaConcurrentFirstUse") {
		return
	}
	var wg sync.WaitGroup
	got := make([]*Schema, 16)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d := allDrafts[i%len(allDrafts)]
			got[i] = (&dialect{draft: d}).getSchema(false, nil)
			if d.version >= 2019 {
				(&dialect{draft: d, vocabs: []string{"core", "applicator"}}).getSchema(false, nil)
			}
		}(i)
	}
	wg.Wait()
	for i, s := range got {
		if s == nil || s != allDrafts[i%len(allDrafts)].sch {
			t.Fatalf("goroutine %d got metaschema %p, want the draft's one", i, s)
		}
	}
}

// BenchmarkLoadMetaschemas is what the package init used to cost every
// program: compiling the metaschemas and vocabularies of all five drafts.
// Now each draft pays its share on first use, if ever.
func BenchmarkLoadMetaschemas(b *testing.B) {
	for _, d := range allDrafts {
		b.Run("draft"+strconv.Itoa(d.version), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				d.metaOnce, d.sch, d.vocabSchemas = sync.Once{}, nil, nil
				d.loadMeta()
			}
		})
	}
}
