package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flare-slurm/flare-slurm/generator/prepare"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// TestProblemRuleOfRealProblems pins the SARIF rule id of one problem of
// every kind, made by the code that reports it, to the id it had when the
// class was told from the message (code scanning tracks alerts by rule id).
func TestProblemRuleOfRealProblems(t *testing.T) {
	dir := t.TempDir()
	one := func(ps schema.Problems) problem.Problem {
		t.Helper()
		if len(ps) == 0 {
			t.Fatal("no problem")
		}
		return ps[0]
	}
	at := func(ps schema.Problems, path string) problem.Problem {
		t.Helper()
		for _, p := range ps {
			if p.Path == path {
				return p
			}
		}
		t.Fatalf("no problem at %q in %v", path, ps)
		return problem.Problem{}
	}
	slurm := func(text string) schema.Problems {
		ps, _ := schema.ValidateData(schema.KindSlurmConfig, "c.yaml", []byte(text), schema.ValidateOptions{})
		return ps
	}
	_, missing, _ := schema.LoadSlurmConfig(filepath.Join(dir, "missing.yaml"), false)
	_, isDir, _ := schema.LoadSlurmConfig(dir, false)
	kit := filepath.Join(dir, "kit")
	if err := os.Mkdir(kit, 0o755); err != nil {
		t.Fatal(err)
	}
	_, layout := schema.LoadKit(kit, false)
	drift := (&prepare.Drift{Output: dir, Changes: []prepare.Change{{Path: "local/x", Detail: "cannot read file: differs"}}}).Problems()
	for _, tc := range []struct {
		name string
		p    problem.Problem
		kind problem.Kind
		rule string
	}{
		{"missing file", one(missing), problem.Read, "read"},
		{"a directory as a file", one(isDir), problem.Layout, "check"},
		{"syntax", one(slurm("a: [\n")), problem.Syntax, "syntax"},
		{"alias", at(slurm("runtime: &a slurm\nparent: *a\n"), "parent"), problem.Structure, "check"},
		{"top level", one(slurm("- a\n")), problem.Structure, "check"},
		{"unknown key", at(slurm("runtime: slurm\njob_launcher: {sandbox: none, python_path: /p}\nbogus: 1\n"), "bogus"), problem.Schema, "schema"},
		{"rule at a key", at(slurm("runtime: slurm\njob_launcher: {sandbox: none, python_path: /p, image: /x.sif}\n"), "job_launcher.image"), problem.Rule, "schema"},
		{"kit layout", one(layout), problem.Layout, "check"},
		{"drift", one(drift), problem.Drift, "drift"},
	} {
		if tc.p.Kind != tc.kind || problemRule(tc.p) != tc.rule {
			t.Errorf("%s: %v: kind %q rule %q, want kind %q rule %q", tc.name, tc.p, tc.p.Kind, problemRule(tc.p), tc.kind, tc.rule)
		}
	}
}

// TestProblemRuleByKindNotMessage: the class of a problem comes from its
// Kind; a message that reads like another kind's changes nothing (the hint
// of a failed validate: schema/validate's TestHintByKindNotMessage).
func TestProblemRuleByKindNotMessage(t *testing.T) {
	for _, tc := range []struct {
		p    problem.Problem
		rule string
	}{
		{problem.Problem{Kind: problem.Schema, File: "f", Path: "a", Message: "cannot read file: no such file or directory"}, "schema"},
		{problem.Problem{Kind: problem.Rule, File: "f", Message: "not valid YAML: found a tab"}, "check"},
		{problem.Problem{Kind: problem.Read, File: "f", Path: "a", Message: "unknown key (allowed: b)"}, "read"},
		{problem.Problem{Kind: problem.Syntax, File: "f", Path: "a", Message: "duplicate key (first defined at line 1)"}, "syntax"},
		{problem.Problem{Kind: problem.Structure, File: "f", Path: "a", Message: "must be an integer"}, "check"},
		{problem.Problem{Kind: problem.Layout, File: "f", Path: "a", Message: "is required"}, "check"},
		{problem.Problem{Kind: problem.Schema, File: "f", Message: "is required"}, "check"}, // about the whole file
		{problem.Problem{Kind: problem.Drift, File: "f", Path: "a", Message: "unknown key"}, "drift"},
		{problem.Problem{File: "f", Path: "a", Message: "cannot read file: x"}, "check"}, // no kind
	} {
		if got := problemRule(tc.p); got != tc.rule {
			t.Errorf("%v (kind %q): rule %q, want %q", tc.p, tc.p.Kind, got, tc.rule)
		}
	}
}
