package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers the flare-slurm binary for testscript: scripts in
// testdata/*.txtar run it in-process as "exec flare-slurm …".
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"flare-slurm": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs every testdata/*.txtar. UPDATE_SCRIPTS=1 rewrites the
// expected output in place (review the diff before committing it).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup:               scriptSetup,
	})
}
