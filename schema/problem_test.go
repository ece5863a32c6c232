package schema

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// TestProblemKinds: each problem's Kind is set where it is made: a read
// failure, a syntax error, the YAML structure, a key or value of the
// schema, a rule across keys, and a kit's layout.
func TestProblemKinds(t *testing.T) {
	_, probs := parseSlurm("c.yaml", []byte("runtime: slurm\njob_launcher: {sandbox: none, python_path: p, image: /x.sif}\nruntime: x\nbase: &a {}\nx: *a\n"))
	got := map[string]problem.Kind{}
	atKey := map[string]bool{}
	for _, p := range probs {
		got[p.Path+": "+p.Message] = p.Kind
		atKey[p.Path] = p.AtKey
	}
	want := map[string]problem.Kind{
		"runtime: duplicate key (first defined at line 1)":               problem.Structure,
		"x: YAML aliases are not supported":                              problem.Structure,
		"job_launcher.python_path: must be an absolute path (got \"p\")": problem.Schema,
		"base: unknown key (allowed: job_launcher, parent, runtime)":     problem.Schema,
		"x: unknown key (allowed: job_launcher, parent, runtime)":        problem.Schema,
		"job_launcher.image: must not be set when sandbox is none":       problem.Rule,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %v\nwant %v", got, want)
	}
	if !atKey["base"] || atKey["job_launcher.python_path"] || atKey["runtime"] {
		t.Errorf("AtKey: only an unknown key is about the key itself: %v", atKey)
	}
	dir := t.TempDir()
	kinds := func(ps Problems) []problem.Kind {
		var ks []problem.Kind
		for _, p := range ps {
			ks = append(ks, p.Kind)
		}
		return ks
	}
	if _, ps, _ := LoadSlurmConfig(filepath.Join(dir, "missing.yaml"), false); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Read}) {
		t.Errorf("missing file: %v %v", ps, kinds(ps))
	}
	if _, ps, _ := LoadSlurmConfig(dir, false); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Layout}) {
		t.Errorf("a directory as a file: %v %v", ps, kinds(ps))
	}
	if _, ps := parseSlurm("c.yaml", []byte("a: [\n")); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Syntax}) {
		t.Errorf("syntax: %v %v", ps, kinds(ps))
	}
	if _, ps := parseSlurm("c.yaml", []byte("- a\n")); !reflect.DeepEqual(kinds(ps), []problem.Kind{problem.Structure}) {
		t.Errorf("top level: %v %v", ps, kinds(ps))
	}
	if _, ps := LoadKit(dir, false); len(ps) == 0 || slices.ContainsFunc(ps, func(p Problem) bool { return p.Kind != problem.Layout }) {
		t.Errorf("an empty kit is a layout problem: %v %v", ps, kinds(ps))
	}
	if SchemaOf(KindKit, "k/config.yaml") != KindSlurmConfig || SchemaOf(KindKit, "k/local/study_runtime.yaml") != KindStudyRuntime ||
		SchemaOf(KindKit, "k/startup/rootCA.pem") != "" || SchemaOf(kindJobMeta, "x.json") != kindJobMeta {
		t.Error("SchemaOf")
	}
}
