package editortest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

// serverPath is yaml-language-server as `npm ci` in testdata installs it.
const serverPath = "testdata/node_modules/yaml-language-server/bin/yaml-language-server"

// needServer returns the absolute path of the server script; without it (or
// without node) the test fails under CI=true and is skipped otherwise, like
// the Slurm tier (`make test` runs `npm ci` when npm is there).
func needServer(t *testing.T) string {
	t.Helper()
	why := ""
	if _, err := os.Stat(serverPath); err != nil {
		why = "yaml-language-server is not installed (run `make editor-deps`, or `npm ci` in internal/editortest/testdata)"
	} else if _, err := exec.LookPath("node"); err != nil {
		why = "node is not on PATH"
	}
	if why != "" {
		testenv.Unavailable(t, "%s", why)
	}
	abs, err := filepath.Abs(serverPath)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// schemaFile is the path of schema/NAME.schema.json.
func schemaFile(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "schema", name+".schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// editorSettings associates the schemas with file names the way
// docs/validate.md tells users to (yaml.schemas).
func editorSettings(t *testing.T) map[string]any {
	return map[string]any{
		"validate":   true,
		"completion": true,
		"hover":      true,
		"schemas": map[string]any{
			fileURI(schemaFile(t, "slurm-config")):  []string{"slurm.yaml"},
			fileURI(schemaFile(t, "study-runtime")): []string{"study_runtime.yaml"},
			fileURI(schemaFile(t, "job-meta")):      []string{"meta.json"},
		},
	}
}

// schemaNode reads schema/NAME.schema.json and follows the JSON pointer
// segments (a "$ref" on the way is followed too).
func schemaNode(t *testing.T, name string, path ...string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(schemaFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	node := doc
	for _, seg := range path {
		if ref, ok := node["$ref"].(string); ok {
			node = schemaNode(t, name, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
		}
		next, ok := node[seg].(map[string]any)
		if !ok {
			t.Fatalf("%s: no %s in %v", name, seg, path)
		}
		node = next
	}
	if ref, ok := node["$ref"].(string); ok {
		return schemaNode(t, name, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
	return node
}

// propertyNames are the keys of a schema node's "properties".
func propertyNames(node map[string]any) []string {
	props, _ := node["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func labels(items []completionItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Label
	}
	return out
}

// hasAll fails unless every name is offered.
func hasAll(t *testing.T, what string, items []completionItem, names []string) {
	t.Helper()
	got := labels(items)
	for _, n := range names {
		if !slices.Contains(got, n) {
			t.Errorf("%s: %q is not offered; offered %q", what, n, got)
		}
	}
}

// noNullInserted fails when accepting an item would write a null (or the
// string "null") into the file: an editor user takes the inserted text as
// the value the key should have.
var nullValue = regexp.MustCompile(`:\s*(\$\{\d+:)?"?null"?\}?\s*($|\n)`)

func noNullInserted(t *testing.T, what string, items []completionItem) {
	t.Helper()
	for _, it := range items {
		if nullValue.MatchString(it.text()) {
			t.Errorf("%s: accepting %q inserts a null value:\n%s", what, it.Label, it.text())
		}
	}
}

func TestYAMLLanguageServer(t *testing.T) {
	server := needServer(t)
	dir := t.TempDir()
	c := startServer(t, server, dir, editorSettings(t))

	// The server applies the settings asynchronously: until a file is
	// validated against our schema, edit it again (a new version makes the
	// server validate it again), within lspDeadline.
	warmPath := filepath.Join(dir, "warm", "slurm.yaml")
	warm := c.open(warmPath, "runtime: slurm\n")
	deadline := time.Now().Add(lspDeadline)
	for version := 2; ; version++ {
		d := c.diagnostics(warm)
		if len(d) > 0 && strings.Contains(d[0].Source, "flare-slurm slurm.yaml") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurm.yaml is not validated with slurm-config.schema.json within %s: %+v", lspDeadline, d)
		}
		time.Sleep(100 * time.Millisecond)
		c.change(warm, version, "runtime: slurm\n")
	}

	t.Run("an empty slurm.yaml completes the top-level keys", func(t *testing.T) {
		uri := c.open(filepath.Join(dir, "empty", "slurm.yaml"), "")
		items := c.completion(uri, 0, 0)
		hasAll(t, "empty slurm.yaml", items, propertyNames(schemaNode(t, "slurm-config")))
		noNullInserted(t, "empty slurm.yaml", items)
	})

	t.Run("job_launcher completes every key; inserting it writes the required ones and no null", func(t *testing.T) {
		uri := c.open(filepath.Join(dir, "jl", "slurm.yaml"), "runtime: slurm\njob_launcher:\n  \n")
		items := c.completion(uri, 2, 2)
		keys := propertyNames(schemaNode(t, "slurm-config", "properties", "job_launcher"))
		if len(keys) < 16 {
			t.Fatalf("job_launcher has %d keys in the schema, want at least 16", len(keys))
		}
		hasAll(t, "job_launcher", items, keys)
		noNullInserted(t, "job_launcher", items)

		top := c.completion(c.open(filepath.Join(dir, "top", "slurm.yaml"), "runtime: slurm\n"), 1, 0)
		noNullInserted(t, "top level", top)
		for _, it := range top {
			if it.Label != "job_launcher" {
				continue
			}
			for _, req := range []string{"sandbox:", "python_path:"} {
				if !strings.Contains(it.text(), req) {
					t.Errorf("inserting job_launcher does not write its required %s:\n%s", req, it.text())
				}
			}
		}
	})

	t.Run("nested blocks complete their keys without null values", func(t *testing.T) {
		for _, tc := range []struct {
			file, text string
			line, char int
			schema     string
			path       []string
		}{
			{"slurm.yaml", "runtime: slurm\njob_launcher:\n  sbatch_directives:\n    \n", 3, 4, "slurm-config", []string{"properties", "job_launcher", "properties", "sbatch_directives"}},
			{"slurm.yaml", "runtime: slurm\njob_launcher:\n  executables:\n    \n", 3, 4, "slurm-config", []string{"properties", "job_launcher", "properties", "executables"}},
			{"slurm.yaml", "runtime: slurm\nparent:\n  \n", 2, 2, "slurm-config", []string{"properties", "parent"}},
			{"study_runtime.yaml", "format_version: 2\nstudies:\n  s1:\n    \n", 3, 4, "study-runtime", []string{"$defs", "study"}},
			{"study_runtime.yaml", "format_version: 2\nstudies:\n  s1:\n    slurm:\n      \n", 4, 6, "study-runtime", []string{"$defs", "study", "properties", "slurm"}},
			{"meta.json", "launcher_spec:\n  default:\n    slurm:\n      \n", 3, 6, "job-meta", []string{"$defs", "jobSlurm"}},
		} {
			what := tc.file + " " + strings.Join(tc.path, ".")
			uri := c.open(filepath.Join(t.TempDir(), tc.file), tc.text)
			items := c.completion(uri, tc.line, tc.char)
			hasAll(t, what, items, propertyNames(schemaNode(t, tc.schema, tc.path...)))
			noNullInserted(t, what, items)
		}
	})

	t.Run("enum values are offered", func(t *testing.T) {
		uri := c.open(filepath.Join(dir, "enum", "slurm.yaml"), "runtime: slurm\njob_launcher:\n  sandbox: \n")
		hasAll(t, "sandbox value", c.completion(uri, 2, 11), []string{"apptainer", "pyxis", "none"})
	})

	t.Run("hover shows the schema's description of every job_launcher key", func(t *testing.T) {
		jl := schemaNode(t, "slurm-config", "properties", "job_launcher")
		keys := propertyNames(jl)
		var text strings.Builder
		text.WriteString("runtime: slurm\njob_launcher:\n")
		for _, k := range keys {
			text.WriteString("  " + k + ": x\n")
		}
		uri := c.open(filepath.Join(dir, "hover", "slurm.yaml"), text.String())
		for i, k := range keys {
			got := unescapeMarkdown(c.hover(uri, 2+i, 3))
			desc, _ := jl["properties"].(map[string]any)[k].(map[string]any)["description"].(string)
			// The first sentence is enough: the server may wrap the rest.
			first, _, _ := strings.Cut(desc, ". ")
			if desc == "" || !strings.Contains(got, first) {
				t.Errorf("hover on job_launcher.%s: got %q, want the description %q", k, got, desc)
			}
		}
	})

	t.Run("diagnostics are plain messages, ours where the schema has one", func(t *testing.T) {
		uri := c.open(filepath.Join(dir, "diag", "slurm.yaml"),
			"runtime: slurm\njob_launcher:\n  sandbox: docker\n  python_path: bin/python\n  multi_node_port_range: 1-2-3\n  bogus: 1\n")
		want := map[int]string{
			2: "apptainer",                  // the allowed values are named
			3: "must be an absolute path",   // patternErrorMessage
			4: "must be \"START-END\" with", // patternErrorMessage
			5: "bogus",                      // the unknown key
		}
		got := map[int]string{}
		for _, d := range c.diagnostics(uri) {
			var msg string
			if err := json.Unmarshal(d.Message, &msg); err != nil {
				t.Errorf("line %d: the message is not text but %s (an errorMessage object shown raw?)", d.Range.Start.Line+1, d.Message)
				continue
			}
			got[d.Range.Start.Line] += msg + "\n"
		}
		for line, w := range want {
			if !strings.Contains(got[line], w) {
				t.Errorf("line %d: got %q, want a message containing %q", line+1, got[line], w)
			}
		}
	})

	t.Run("the bundled examples have no diagnostics", func(t *testing.T) {
		for _, tc := range []struct{ example, as string }{
			{"slurm.yaml", "slurm.yaml"},
			{"server-slurm.yaml", "slurm.yaml"},
			{"study_runtime.yaml", "study_runtime.yaml"},
			{"meta.json", "meta.json"},
		} {
			text, err := os.ReadFile(filepath.Join("..", "..", "examples", tc.example))
			if err != nil {
				t.Fatal(err)
			}
			uri := c.open(filepath.Join(t.TempDir(), tc.as), string(text))
			if d := c.diagnostics(uri); len(d) != 0 {
				t.Errorf("examples/%s: %d diagnostics, want none: %+v", tc.example, len(d), d)
			}
		}
	})
}

// unescapeMarkdown undoes the server's markdown escaping of hover text.
func unescapeMarkdown(s string) string {
	return regexp.MustCompile(`\\(.)`).ReplaceAllString(s, "$1")
}
