package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestConsistentFlags pins issue 17's flag rules over the whole command
// tree: --json on every command that reports (completion prints a shell
// script and is exempt), --workspace for the workspace of every command
// that has one (prepare's --output is NVFlare's spelling of the same
// flag), --force on every command that overwrites files, --version on root.
func TestConsistentFlags(t *testing.T) {
	root := testRoot()
	if root.Flags().Lookup("version") == nil {
		t.Error("flare-slurm has no --version")
	}
	// Commands that take a workspace, and commands that overwrite
	// something they find.
	workspace := map[string]bool{"prepare": true, "render": true, "launch": true, "status": true, "wait": true,
		"cancel": true, "gc": true, "bootstrap-check": true, "check": true, "logs": true}
	overwrites := map[string]bool{"prepare": true, "render": true}
	seen := map[string]bool{}
	for _, c := range root.Commands() {
		name := c.Name()
		if c.Hidden || name == "help" {
			continue
		}
		seen[name] = true
		has := func(flag string) bool { return c.Flags().Lookup(flag) != nil }
		if name != "completion" && !has("json") {
			t.Errorf("%s has no --json", name)
		}
		if has("json") && c.Flags().Lookup("json").Value.Type() != "bool" {
			t.Errorf("%s --json is not a switch", name)
		}
		if workspace[name] != has("workspace") {
			t.Errorf("%s: --workspace present %v, want %v", name, has("workspace"), workspace[name])
		}
		if overwrites[name] && !has("force") {
			t.Errorf("%s overwrites files but has no --force", name)
		}
		for _, f := range []string{"dir", "ws", "out", "workdir"} {
			if has(f) {
				t.Errorf("%s --%s: the workspace flag is --workspace", name, f)
			}
		}
	}
	for name := range workspace {
		if !seen[name] {
			t.Errorf("no command %s", name)
		}
	}
	// prepare --output and --workspace are one flag in two spellings.
	var prepare *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "prepare" {
			prepare = c
		}
	}
	if prepare == nil || prepare.Flags().Lookup("output") == nil {
		t.Fatal("prepare lost --output, NVFlare's spelling of --workspace")
	}
}
