package main

import (
	"path/filepath"
	"runtime"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptSetup gives every script $REPO (the repository root, for the
// examples) before it runs.
func scriptSetup(env *testscript.Env) error {
	_, file, _, _ := runtime.Caller(0)
	env.Setenv("REPO", filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")))
	return nil
}
