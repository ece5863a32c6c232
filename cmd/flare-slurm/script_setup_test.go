package main

import "github.com/rogpeppe/go-internal/testscript"

// scriptSetup gives every script $REPO (the repository root, for the
// examples) before it runs.
func scriptSetup(env *testscript.Env) error {
	env.Setenv("REPO", repoRoot())
	return nil
}
