package prepare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalWorkIsKept (issue 25 item 2): examples/study_runtime.yaml says to
// put a study runtime in the workspace's local/; the next prepare replaced
// it with the empty template, silently. What a person wrote in local/ is
// carried into the new workspace and named in a warning, for a client and
// a server workspace; prepare --check finds no drift in it; what prepare
// writes from the config stays prepare's.
func TestLocalWorkIsKept(t *testing.T) {
	for _, kit := range []string{"site-1", "server"} {
		t.Run(kit, func(t *testing.T) {
			f := newFixture(t, kit, bareConfig)
			os.Remove(filepath.Join(f.kit, "local", "study_runtime.yaml")) // the kit has none: prepare writes the template
			out := filepath.Join(f.dir, "ws")
			f.run(t, out)
			template := string(readFile(t, filepath.Join(out, "local", "study_runtime.yaml")))
			study := "format_version: 2\nstudies:\n  s1:\n    env:\n      MODE: fast\n"
			written := map[string]string{
				"local/study_runtime.yaml":     study,
				"local/notes.txt":              "ask the study admin before changing s1\n",
				"local/custom/my_component.py": "X = 1\n",
			}
			for rel, content := range written {
				p := filepath.Join(out, filepath.FromSlash(rel))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// A hand edit of a file prepare writes from the config is not kept.
			res := filepath.Join(out, "local", "resources.json.default")
			prepared := readFile(t, res)
			if err := os.WriteFile(res, append(prepared, ' '), 0o644); err != nil {
				t.Fatal(err)
			}

			// Re-prepare with another config.
			f.writeConfig(t, bareConfig+"  poll_interval: 20\n")
			r := f.run(t, out)
			for rel, content := range written {
				if got := string(readFile(t, filepath.Join(out, filepath.FromSlash(rel)))); got != content {
					t.Errorf("%s: %q after re-prepare, want what the person wrote", rel, got)
				}
				if !strings.Contains(strings.Join(r.Kept, ","), rel) || !strings.Contains(strings.Join(r.Warnings, "\n"), "kept "+rel+" from the workspace") {
					t.Errorf("%s: not named as kept: %v %q", rel, r.Kept, r.Warnings)
				}
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "the study admin's, where the kit has none") {
				t.Errorf("warnings %q", r.Warnings)
			}
			if got := string(readFile(t, res)); !strings.Contains(got, `"poll_interval": 20.0`) {
				t.Error("resources.json.default was not rewritten from the new config")
			}

			// prepare --check: the kept files are no drift.
			w := f.render(t, out)
			d, err := Diff(w)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Changes) != 0 {
				t.Errorf("drift after re-prepare: %+v", d.Changes)
			}

			// The kit gains its own study_runtime.yaml: the workspace's,
			// written by a person, is still kept, and said to differ.
			writeKitFile(t, f, "local/study_runtime.yaml", template)
			r = f.run(t, out)
			if got := string(readFile(t, filepath.Join(out, "local", "study_runtime.yaml"))); got != study {
				t.Errorf("study_runtime.yaml %q, want the workspace's", got)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "kept local/study_runtime.yaml from the workspace "+out+" (it differs from the kit's") {
				t.Errorf("warnings %q", r.Warnings)
			}
		})
	}
}
