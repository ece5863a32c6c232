package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers the flare-slurm binary for testscript: scripts in
// testdata/*.txtar run it in-process as "exec flare-slurm …". After the
// tests it removes the binary madeBinary built.
func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){
		"flare-slurm": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// cleanupM runs the tests, then removes madeBinary's directory
// (testscript.Main exits the process itself).
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	code := c.m.Run()
	if made.dir != "" {
		os.RemoveAll(made.dir)
	}
	return code
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
