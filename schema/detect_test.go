package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetectKindUnknown(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, content, kind string
		problems            bool
	}{
		{"README.md", "# Title\n\nText: with [a colon\n", "", false},
		{"run.sh", "#!/bin/sh\necho: a: b\n", "", false},
		{"notes.txt", "just words\n", "", false},
		{"broken.yaml", "a: b\n c: d: e\n", "", true},
		{"broken.json", "{", kindJobMeta, false},
		{"slurm.yaml", "foo: 1\n", KindSlurmConfig, false},
		{"config.yaml", "a: [\n", KindSlurmConfig, false},
		{"c.txt", "runtime: slurm\n", KindSlurmConfig, false},
		{"other.yaml", "name: x\n", "", false},
	} {
		kind, probs := DetectKind(write(tc.name, tc.content))
		if kind != tc.kind || (probs != nil) != tc.problems {
			t.Errorf("%s: kind %q problems %q, want %q (problems %v)", tc.name, kind, problemLines(probs), tc.kind, tc.problems)
		}
	}
}

// TestDetectKindJSONTopLevelKeys: a JSON object's kind is told from its
// top-level keys alone, read without a tree; a key of another kind deeper
// down does not count, and what is not plain JSON (a byte order mark, YAML
// in braces) is decided by the YAML reader as before (review of issue 25:
// M6).
func TestDetectKindJSONTopLevelKeys(t *testing.T) {
	for _, tc := range []struct {
		name, content, kind string
	}{
		{"a.json", `{"name": "j", "resource_spec": {"site-1": {"runtime": {"studies": 1}}}}`, kindJobMeta},
		{"a.yaml", `{"deploy_map": {"x": {"runtime": 1, "job_launcher": 2}}}`, ""},
		{"a.yaml", `{"nested": {"studies": {}}}`, ""},
		{"a.json", `{"x": {"runtime": "slurm"}}`, kindJobMeta},
		{"a.yaml", ` {"format_version": 1, "studies": {}}`, KindStudyRuntime},
		{"a.json", "{\"run\\u0074ime\": \"slurm\"}", KindSlurmConfig},
		{"a.json", "\ufeff{\"runtime\": \"slurm\"}", KindSlurmConfig},
		{"a.yaml", "{runtime: slurm}", KindSlurmConfig},
		{"a.yaml", "# comment\n{\"job_launcher\": {}}", KindSlurmConfig},
		{"a.yaml", "{\"launcher_spec\": {}, \"a\": [1, {\"studies\": 2}]}", kindJobMeta},
	} {
		kind, probs := DetectKindData(tc.name, []byte(tc.content), true)
		if kind != tc.kind || probs != nil {
			t.Errorf("%s %q: kind %q problems %q, want %q", tc.name, tc.content, kind, problemLines(probs), tc.kind)
		}
	}
}

// bigJobMeta is a JSON job meta of about size bytes: many sites, each
// with a resource spec and launcher settings.
func bigJobMeta(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"name": "big", "deploy_map": {"app": ["@ALL"]}, "resource_spec": {`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"site-%d": {"num_of_gpus": 1, "mem_per_gpu_in_GiB": 8, "runtime": {"cpus": 4, "notes": "site %d of many"}}`, i, i)
	}
	b.WriteString(`}, "min_clients": 2}`)
	return []byte(b.String())
}

// BenchmarkDetectKindJobMetaJSON: telling the kind of a 3.9 MB job meta (under the 4 MiB input bound) that
// its name does not give away (go test -run '^$' -bench DetectKind
// -benchmem ./schema).
func BenchmarkDetectKindJobMetaJSON(b *testing.B) {
	data := bigJobMeta(3_900_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if kind, probs := DetectKindData("big.json", data, true); kind != kindJobMeta || probs != nil {
			b.Fatalf("kind %q problems %v", kind, problemLines(probs))
		}
	}
}

// BenchmarkValidateJobMetaManySites: every site of a job meta with 20,000
// sites checked (validate with no --site). Each site was looked up in the
// whole resource_spec, quadratic in the sites (go test -run '^$' -bench
// JobMetaManySites -benchmem ./schema).
func BenchmarkValidateJobMetaManySites(b *testing.B) {
	var m strings.Builder
	m.WriteString(`{"name": "many", "resource_spec": {`)
	for i := range 20000 {
		if i > 0 {
			m.WriteString(", ")
		}
		fmt.Fprintf(&m, `"site-%d": {"num_of_gpus": 1}`, i)
	}
	m.WriteString(`}, "launcher_spec": {"default": {"slurm": {"time": "1:00:00"}}}}`)
	data := []byte(m.String())
	b.ReportAllocs()
	for b.Loop() {
		if _, probs := ParseJobMeta("many.json", data, ""); probs != nil {
			b.Fatal(problemLines(probs))
		}
	}
}
