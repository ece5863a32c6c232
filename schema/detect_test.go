package schema

import (
	"os"
	"path/filepath"
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
		{"broken.json", "{", KindJobMeta, false},
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
