package schema

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

func intp(i int) *int           { return &i }
func floatp(f float64) *float64 { return &f }
func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParseJobMetaSites(t *testing.T) {
	data, err := os.ReadFile("testdata/meta.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		site string
		want JobMeta
	}{
		{"site-1", JobMeta{
			Study: "pathology",
			Slurm: JobSlurm{Nodes: 1, GPUsPerNode: intp(4), CPUsPerNode: intp(4), MemPerNodeMiB: intp(2048),
				Time: "02:00:00", PendingTimeout: floatp(120)},
			Resources: ResourceSpec{NumOfGPUs: intp(4)},
		}},
		{"site-2", JobMeta{
			Study:     "pathology",
			Slurm:     JobSlurm{Image: "/images/job.sif", Nodes: 2, GPUsPerNode: intp(4), CPUsPerNode: intp(4), Time: "02:00:00"},
			Resources: ResourceSpec{NumOfGPUs: intp(8)},
		}},
		{"site-4", JobMeta{
			Study: "pathology",
			Slurm: JobSlurm{Nodes: 3, CPUsPerNode: intp(4), Time: "02:00:00",
				AdditionalNodeCommand: []string{"python", "-m", "nvflare.app_opt.pt.torchrun_node", "custom/train job.py", "$HOME"}},
		}},
		{"site-3", JobMeta{
			Study: "pathology",
			Slurm: JobSlurm{Nodes: 1, CPUsPerNode: intp(4), Time: "02:00:00"},
		}},
		{"", JobMeta{
			Study: "pathology",
			Slurm: JobSlurm{Nodes: 1, CPUsPerNode: intp(4), Time: "02:00:00"},
		}},
	} {
		got, probs := ParseJobMeta("meta.json", data, tc.site)
		if probs != nil {
			t.Fatalf("%s: %v", tc.site, probs)
		}
		got.SlurmPaths = nil
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.site, *got, tc.want)
		}
	}
}

func TestJobMetaEffective(t *testing.T) {
	for _, tc := range []struct {
		name, json         string
		gpus, cpus, memMiB any
	}{
		{"one node num_of_gpus", `{"resource_spec": {"s": {"num_of_gpus": 2}}}`, 2, nil, nil},
		{"zero gpus", `{"resource_spec": {"s": {"num_of_gpus": 0}}}`, nil, nil, nil},
		{"gpus_per_node wins", `{"resource_spec": {"s": {"num_of_gpus": 8}}, "launcher_spec": {"s": {"slurm": {"nodes": 2, "gpus_per_node": 4}}}}`, 4, nil, nil},
		{"num_of_cpus and memory", `{"resource_spec": {"s": {"num_of_cpus": 3, "memory": "2Ti"}}}`, nil, 3, 2 * 1024 * 1024},
		{"per node values", `{"launcher_spec": {"default": {"slurm": {"cpus_per_node": 9, "mem_per_node": 100}}}}`, nil, 9, 100},
	} {
		m, probs := ParseJobMeta("meta.json", []byte(tc.json), "s")
		if probs != nil {
			t.Fatalf("%s: %v", tc.name, probs)
		}
		if g, c, mem := derefInt(m.EffectiveGPUsPerNode()), derefInt(m.EffectiveCPUsPerNode()), derefInt(m.EffectiveMemMiB()); g != tc.gpus || c != tc.cpus || mem != tc.memMiB {
			t.Errorf("%s: gpus %v cpus %v mem %v; want %v %v %v", tc.name, g, c, mem, tc.gpus, tc.cpus, tc.memMiB)
		}
	}
}

func TestMemoryMiB(t *testing.T) {
	for in, want := range map[string]int{"1Mi": 1, "512Mi": 512, "16Gi": 16384, "1Ti": 1048576, "999999999Ti": 999999999 * 1048576} {
		if got, ok := MemoryMiB(in); !ok || got != want {
			t.Errorf("MemoryMiB(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "Gi", "0Gi", "01Gi", "16G", "16gi", "-1Gi", "+1Gi", "1.5Gi", "1000000000Ti", "16 Gi"} {
		if got, ok := MemoryMiB(in); ok {
			t.Errorf("MemoryMiB(%q) = %d, want invalid", in, got)
		}
	}
}

func TestJobMetaProblems(t *testing.T) {
	for _, tc := range []struct {
		name, site, json string
		want             []string
	}{
		{"not an object", "", `[1, 2]`, []string{`meta.json:1:1: top level must be a mapping (got list)`}},
		{"not JSON", "", `{"a": `, []string{`meta.json:1:7: not valid JSON: expecting a value (NVFlare reads a job's meta with Python's json.loads: no comments, quoted keys, double quotes, no trailing commas)`}},
		{"study empty", "", `{"study": ""}`, []string{`meta.json:1:11: study: must not be empty`}},
		{"study type", "", `{"study": 3}`, []string{`meta.json:1:11: study: must be a string (got integer)`}},
		{"unknown slurm key", "", `{"launcher_spec": {"default": {"slurm": {"node": 2, "partition": "x"}}}}`, []string{
			"meta.json:1:42: launcher_spec.default.slurm.node: unsupported job-owned Slurm key (allowed: image, nodes, gpus_per_node, cpus_per_node, mem_per_node, time, pending_timeout, additional_node_command) (did you mean `nodes`?)",
			"meta.json:1:53: launcher_spec.default.slurm.partition: unsupported job-owned Slurm key (allowed: image, nodes, gpus_per_node, cpus_per_node, mem_per_node, time, pending_timeout, additional_node_command) (the site sets `partition`: job_launcher.sbatch_directives.partition in its slurm.yaml)",
		}},
		{"slurm values", "", `{"launcher_spec": {"s": {"slurm": {"nodes": 0, "gpus_per_node": 1.5, "cpus_per_node": "4", "mem_per_node": 0, "time": "1 h", "pending_timeout": 0, "image": "rel"}}}}`, []string{
			`meta.json:1:45: launcher_spec.s.slurm.nodes: must be at least 1 (got 0)`,
			`meta.json:1:65: launcher_spec.s.slurm.gpus_per_node: must be an integer (got number)`,
			`meta.json:1:87: launcher_spec.s.slurm.cpus_per_node: must be an integer (got string)`,
			`meta.json:1:108: launcher_spec.s.slurm.mem_per_node: must be at least 1 MiB (got 0)`,
			`meta.json:1:119: launcher_spec.s.slurm.time: must not contain whitespace (got "1 h")`,
			`meta.json:1:145: launcher_spec.s.slurm.pending_timeout: must be at least 1 second (got 0)`,
			`meta.json:1:157: launcher_spec.s.slurm.image: must be an absolute path without ':' or ',' (got "rel")`,
		}},
		{"resources", "", `{"resource_spec": {"s": {"num_of_gpus": -1, "num_of_cpus": 0, "memory": "16G"}}}`, []string{
			`meta.json:1:41: resource_spec.s.num_of_gpus: must be at least 0 (got -1)`,
			`meta.json:1:60: resource_spec.s.num_of_cpus: must be at least 1 (got 0)`,
			`meta.json:1:73: resource_spec.s.memory: must be a whole number followed by Mi, Gi or Ti, e.g. 16Gi (got "16G")`,
		}},
		{"memory integer", "", `{"resource_spec": {"s": {"memory": 1024}}}`, []string{
			`meta.json:1:36: resource_spec.s.memory: must be a string (got integer)`,
		}},
		{"gpu arithmetic", "s", `{"resource_spec": {"s": {"num_of_gpus": 6}}, "launcher_spec": {"default": {"slurm": {"nodes": 2}}, "s": {"slurm": {"gpus_per_node": 4}}}}`, []string{
			`meta.json:1:41: resource_spec.s.num_of_gpus: must equal nodes * gpus_per_node = 2 * 4 = 8 when both are given (got 6) (fix num_of_gpus or launcher_spec.s.slurm.gpus_per_node)`,
		}},
		{"multi-node gpus need gpus_per_node", "s", `{"resource_spec": {"s": {"num_of_gpus": 4}}, "launcher_spec": {"s": {"slurm": {"nodes": 2}}}}`, []string{
			`meta.json:1:41: resource_spec.s.num_of_gpus: a multi-node job (nodes 2) with num_of_gpus needs gpus_per_node (set launcher_spec.s.slurm.gpus_per_node)`,
		}},
		{"every site checked without --site", "", `{"resource_spec": {"a": {"num_of_gpus": 4}, "b": {"num_of_gpus": 3}}, "launcher_spec": {"default": {"slurm": {"gpus_per_node": 4}}}}`, []string{
			`meta.json:1:66: resource_spec.b.num_of_gpus: must equal nodes * gpus_per_node = 1 * 4 = 4 when both are given (got 3) (fix num_of_gpus or launcher_spec.default.slurm.gpus_per_node)`,
		}},
		{"only the named site checked", "a", `{"resource_spec": {"a": {"num_of_gpus": 4}, "b": {"num_of_gpus": 3}}, "launcher_spec": {"default": {"slurm": {"gpus_per_node": 4}}}}`, nil},
		{"node command shape", "", `{"launcher_spec": {"a": {"slurm": {"nodes": 2, "additional_node_command": "x\ny"}}, "b": {"slurm": {"nodes": 2, "additional_node_command": 7}}}}`, []string{
			`meta.json:1:75: launcher_spec.a.slurm.additional_node_command: must be one line: no carriage return or line feed (byte 2 of the value)`,
			`meta.json:1:140: launcher_spec.b.slurm.additional_node_command: must be a string (got integer)`,
		}},
		{"node command words", "", `{"launcher_spec": {"a": {"slurm": {"nodes": 2, "additional_node_command": "run 'x"}}, "b": {"slurm": {"nodes": 2, "additional_node_command": "  "}}, "c": {"slurm": {"nodes": 3, "additional_node_command": "run ${secret:K}"}}}}`, []string{
			`meta.json:1:75: launcher_spec.a.slurm.additional_node_command: cannot be split into words: no closing quotation (quote it like a POSIX shell command line; it is split once and run without a shell)`,
			`meta.json:1:142: launcher_spec.b.slurm.additional_node_command: must contain at least one word (name the command the other nodes run, or remove the key)`,
			`meta.json:1:205: launcher_spec.c.slurm.additional_node_command: must not reference a secret (${secret:…}) (the other nodes of a node group run without secrets; only the worker on the first node gets them)`,
		}},
		{"node command needs nodes", "", `{"launcher_spec": {"default": {"slurm": {"additional_node_command": "x"}}, "a": {"slurm": {"nodes": 2}}}}`, []string{
			`meta.json:1:69: launcher_spec.default.slurm.additional_node_command: needs nodes > 1, but the default reading (sites without a launcher_spec section of their own) has nodes 1 (set nodes to the size of the group, or remove the command: a one-node job runs the worker only)`,
		}},
		{"node command both malformed and on one node", "", `{"launcher_spec": {"default": {"slurm": {"additional_node_command": "x 'y"}}}}`, []string{
			`meta.json:1:69: launcher_spec.default.slurm.additional_node_command: cannot be split into words: no closing quotation (quote it like a POSIX shell command line; it is split once and run without a shell)`,
			`meta.json:1:69: launcher_spec.default.slurm.additional_node_command: needs nodes > 1, but the default reading (sites without a launcher_spec section of their own) has nodes 1 (set nodes to the size of the group, or remove the command: a one-node job runs the worker only)`,
		}},
		{"node command in the legacy nested block", "a", `{"resource_spec": {"a": {"slurm": {"nodes": 1, "additional_node_command": "x"}}}}`, []string{
			`meta.json:1:75: resource_spec.a.slurm.additional_node_command: needs nodes > 1, but site a's reading has nodes 1 (set nodes to the size of the group, or remove the command: a one-node job runs the worker only)`,
		}},
		{"node command of the default with the site's nodes", "a", `{"launcher_spec": {"default": {"slurm": {"additional_node_command": "x"}}, "a": {"slurm": {"nodes": 2}}}}`, nil},
		{"node command null overrides the default", "a", `{"launcher_spec": {"default": {"slurm": {"additional_node_command": "x", "nodes": 2}}, "a": {"slurm": {"nodes": 1, "additional_node_command": null}}}}`, nil},
		{"node command of one site with one node", "a", `{"launcher_spec": {"default": {"slurm": {"additional_node_command": "x", "nodes": 2}}, "a": {"slurm": {"nodes": 1}}}}`, []string{
			`meta.json:1:69: launcher_spec.default.slurm.additional_node_command: needs nodes > 1, but site a's reading has nodes 1 (set nodes to the size of the group, or remove the command: a one-node job runs the worker only)`,
		}},
		{"duplicate JSON key", "", `{"study": "a", "study": "b"}`, []string{
			`meta.json:1:16: study: duplicate key (first defined at line 1) (remove one of them)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, probs := ParseJobMeta("meta.json", []byte(tc.json), tc.site)
			got := problemLines(probs)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
			if (m == nil) != (tc.want != nil) {
				t.Errorf("meta %v with problems %v", m, tc.want)
			}
		})
	}
}

func TestJobMetaTabsInJSON(t *testing.T) {
	data := []byte("{\n\t\"study\":\t\"x\",\n\t\"launcher_spec\": {\"s\": {\"slurm\": {\"nodes\": 0}}}\n}\n")
	_, probs := ParseJobMeta("meta.json", data, "")
	want := []string{`meta.json:3:45: launcher_spec.s.slurm.nodes: must be at least 1 (got 0)`}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestParseJobMetaOneSite: with a site, another site's malformed section
// does not fail the reading; without a site it does.
func TestParseJobMetaOneSite(t *testing.T) {
	data := []byte(`{
  "resource_spec": {"site-1": {"num_of_gpus": 2}, "site-2": {"num_of_gpus": -1, "memory": "1GB"}},
  "launcher_spec": {
    "default": {"slurm": {"time": "01:00:00"}},
    "site-1": {"slurm": {"gpus_per_node": 2}},
    "site-2": {"slurm": {"nodes": 0, "bogus": 1, "time": "1 h"}},
    "site-3": "not a mapping"
  }
}`)
	m, probs := ParseJobMeta("meta.json", data, "site-1")
	if probs != nil {
		t.Fatalf("site-1: %q", problemLines(probs))
	}
	if m.Slurm.Time != "01:00:00" || m.Slurm.GPUsPerNode == nil || *m.Slurm.GPUsPerNode != 2 || *m.Resources.NumOfGPUs != 2 {
		t.Errorf("site-1 reading: %+v", m)
	}
	_, probs = ParseJobMeta("meta.json", data, "site-2")
	var paths []string
	for _, p := range probs {
		paths = append(paths, p.Path)
	}
	want := []string{"resource_spec.site-2.num_of_gpus", "resource_spec.site-2.memory",
		"launcher_spec.site-2.slurm.nodes", "launcher_spec.site-2.slurm.bogus", "launcher_spec.site-2.slurm.time"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("site-2:\n got %q\nwant %q", paths, want)
	}
	_, probs = ParseJobMeta("meta.json", data, "")
	if len(probs) != len(want)+1 || probs[len(probs)-1].Path != "launcher_spec.site-3" {
		t.Errorf("every site: %q", problemLines(probs))
	}
	// default and the top level are every site's business.
	_, probs = ParseJobMeta("meta.json", []byte(`{"study": 3, "launcher_spec": {"default": {"slurm": {"nodes": 0}}}}`), "site-9")
	if len(probs) != 2 || probs[0].Path != "study" || probs[1].Path != "launcher_spec.default.slurm.nodes" {
		t.Errorf("default: %q", problemLines(probs))
	}
	_, probs = ParseJobMeta("meta.json", []byte(`{"resource_spec": [1]}`), "site-9")
	if len(probs) != 1 || probs[0].Path != "resource_spec" {
		t.Errorf("resource_spec not a mapping: %q", problemLines(probs))
	}
}

// TestParseJobMetaInMakesFinalProblems: a meta embedded in another file
// (a launch request) gets problems made with the enclosing file's path,
// position and hint text, not rewritten afterwards.
func TestParseJobMetaInMakesFinalProblems(t *testing.T) {
	meta := []byte("{\"resource_spec\": {\"s\": {\"num_of_gpus\": 3}},\n \"launcher_spec\": {\"s\": {\"slurm\": {\"nodes\": 2, \"gpus_per_node\": 2, \"gpu\": 1}}}}")
	_, alone := ParseJobMeta("req.json", meta, "s")
	_, embedded := ParseJobMetaIn("req.json", meta, "s", Embedding{Path: "meta", Line: 4, Column: 11})
	if len(alone) != 2 || len(embedded) != 2 {
		t.Fatalf("alone %v\nembedded %v", alone, embedded)
	}
	// A line number in a message is the enclosing file's too.
	dup := []byte("{\"study\": \"a\",\n \"study\": \"b\"}")
	_, ps := ParseJobMetaIn("req.json", dup, "s", Embedding{Path: "meta", Line: 3, Column: 11})
	if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), "req.json:4:2: meta.study: ") || !strings.Contains(ps[0].Message, "first defined at line 3") {
		t.Errorf("duplicate key in an embedded meta: %v", ps)
	}
	for i, want := range []struct{ alone, embedded string }{
		{"req.json:1:41: resource_spec.s.num_of_gpus: must equal nodes * gpus_per_node = 2 * 2 = 4 when both are given (got 3) (fix num_of_gpus or launcher_spec.s.slurm.gpus_per_node)",
			"req.json:4:51: meta.resource_spec.s.num_of_gpus: must equal nodes * gpus_per_node = 2 * 2 = 4 when both are given (got 3) (fix num_of_gpus or meta.launcher_spec.s.slurm.gpus_per_node)"},
		{"req.json:2:68: launcher_spec.s.slurm.gpu: unsupported job-owned Slurm key",
			"req.json:5:68: meta.launcher_spec.s.slurm.gpu: unsupported job-owned Slurm key"},
	} {
		if got := alone[i].String(); !strings.HasPrefix(got, want.alone) {
			t.Errorf("alone: %s\nwant %s", got, want.alone)
		}
		if got := embedded[i].String(); !strings.HasPrefix(got, want.embedded) {
			t.Errorf("embedded: %s\nwant %s", got, want.embedded)
		}
	}
}

// TestJobMetaJSONReadAsJSON (issue 25 item 14): a .json job meta is read
// as JSON, as NVFlare's json.loads reads it. Each of these passed as YAML.
func TestJobMetaJSONReadAsJSON(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"comment", "{\"study\": \"a\" # note\n}", "meta.json:1:15: not valid JSON: expecting ',' delimiter"},
		{"unquoted key", `{study: "a"}`, "meta.json:1:2: not valid JSON: expecting a property name enclosed in double quotes"},
		{"single quotes", `{'study': 'a'}`, "meta.json:1:2: not valid JSON: expecting a property name enclosed in double quotes"},
		{"trailing comma", `{"study": "a",}`, "meta.json:1:15: not valid JSON: expecting a property name enclosed in double quotes"},
		{"raw control character", "{\"name\": \"a\tb\"}", "meta.json:1:12: not valid JSON: invalid control character in string"},
		{"YAML flow", `{study: a, launcher_spec: {}}`, "meta.json:1:2: not valid JSON: expecting a property name enclosed in double quotes"},
	} {
		_, probs := ParseJobMeta("meta.json", []byte(c.text), "")
		got := problemLines(probs)
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) || probs[0].Kind != problem.Syntax {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
	// The same text named .yaml is YAML, and valid.
	if _, probs := ParseJobMeta("meta.yaml", []byte(`{study: a, launcher_spec: {}}`), ""); probs != nil {
		t.Errorf("meta.yaml: %v", probs)
	}
	// A C1 control character is valid in a JSON string and refused by
	// the text rule wherever flare-slurm reads it.
	_, probs := ParseJobMeta("meta.json", []byte("{\"study\": \"a\u0085\"}"), "")
	if got := problemLines(probs); len(got) != 1 || !strings.Contains(got[0], "meta.json:1:13: must not contain the control character U+0085") || probs[0].Kind != problem.Schema {
		t.Errorf("C1 in a string: %q", got)
	}
}

// TestJobMetaJSONReadsOnlyItsSections (issue 25 item 4): of a JSON meta
// only study, launcher_spec and resource_spec are read as YAML (and of
// those, with a site, only default, @default and that site): the NVFlare
// keys and other sites cost no tree, lines and columns stay right after
// blanked text with multi-byte characters, and repeated keys are still
// found everywhere.
func TestJobMetaJSONReadsOnlyItsSections(t *testing.T) {
	meta := `{"name": "日本語の名前", "deploy_map": {"x": [1, 2], "x": [3]}, "study": 3,
  "launcher_spec": {"other": {"slurm": {"bad": 1}}, "s": {"slurm": {"nodez": 2}}},
  "resource_spec": {"other": {"num_of_gpus": "x"}, "s": {"num_of_gpus": -1}}}`
	_, probs := ParseJobMeta("meta.json", []byte(meta), "s")
	want := []string{
		"meta.json:1:48: deploy_map.x: duplicate key (first defined at line 1) (remove one of them)",
		"meta.json:1:68: study: must be a string (got integer)",
		"meta.json:2:69: launcher_spec.s.slurm.nodez: unsupported job-owned Slurm key (allowed: image, nodes, gpus_per_node, cpus_per_node, mem_per_node, time, pending_timeout, additional_node_command) (did you mean `nodes`?)",
		"meta.json:3:73: resource_spec.s.num_of_gpus: must be at least 0 (got -1)",
	}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
	read := &jsonJobMeta{data: []byte(meta), site: "s"}
	scan, _ := (&tree{}).scanJSON([]byte(meta), "", "", read.visit)
	text := read.keep.text([]byte(meta), scan.Root)
	for _, gone := range []string{"deploy_map", "日本", "other", "name"} {
		if strings.Contains(string(text), gone) {
			t.Errorf("%q is read: %s", gone, text)
		}
	}
	if strings.Count(string(text), "\n") != 2 {
		t.Errorf("lines changed: %q", text)
	}
	// Every site: other's sections are read too.
	_, probs = ParseJobMeta("meta.json", []byte(meta), "")
	if got := strings.Join(problemLines(probs), "\n"); !strings.Contains(got, "launcher_spec.other.slurm.bad") || !strings.Contains(got, "resource_spec.other.num_of_gpus") {
		t.Errorf("every site: %s", got)
	}
}

// TestJobMetaSectionTooLarge: a section larger than MaxJobMetaSectionBytes
// is one problem at its key, and its content is not read.
func TestJobMetaSectionTooLarge(t *testing.T) {
	section := `{"slurm": {"time": [` + strings.Repeat("0,", MaxJobMetaSectionBytes) + `0]}}`
	meta := `{"launcher_spec": {"s": ` + section + `}, "study": "a"}`
	_, probs := ParseJobMeta("meta.json", []byte(meta), "s")
	want := []string{fmt.Sprintf("meta.json:1:20: launcher_spec.s: is %d bytes long; flare-slurm reads at most 16384 bytes of a job meta section (a section holds a few Slurm or resource keys: is this the right job?)", len(section))}
	if got := problemLines(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
}

// TestJobMetaJSONListsInSections: a list where a section or a site's
// section belongs is one problem at it, for one site or every site (the
// items of a list are not sections).
func TestJobMetaJSONListsInSections(t *testing.T) {
	for _, site := range []string{"", "s"} {
		for meta, want := range map[string][]string{
			`{"launcher_spec": [1, {"s": 2}], "resource_spec": ["x", "y"], "study": [1]}`: {
				"meta.json:1:19: launcher_spec: must be a mapping (got list)",
				"meta.json:1:51: resource_spec: must be a mapping (got list)",
				"meta.json:1:72: study: must be a string (got list)",
			},
			`{"launcher_spec": {"s": [1, 2]}, "resource_spec": [{"s": {"num_of_gpus": 1}}]}`: {
				"meta.json:1:25: launcher_spec.s: must be a mapping (got list)",
				"meta.json:1:51: resource_spec: must be a mapping (got list)",
			},
		} {
			if _, probs := ParseJobMeta("meta.json", []byte(meta), site); !reflect.DeepEqual(problemLines(probs), want) {
				t.Errorf("site %q, %s:\n got %q\nwant %q", site, meta, problemLines(probs), want)
			}
		}
	}
	req := `{"job_id": "j", "site": "s", "role": "client", "meta": {}, "job_args": [{"workspace": ["-m", "x"]}, "zz"]}`
	r, probs := ParseLaunchRequest("r.json", []byte(req), "")
	want := []string{"r.json:1:72: job_args: must be an object of [flag, value] pairs, not a JSON array"}
	if got := problemLines(r.Place(probs)); !reflect.DeepEqual(got, want) {
		t.Errorf("request: got %q, want %q", got, want)
	}
}
