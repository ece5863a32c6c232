package main

import (
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/flare-slurm/flare-slurm/schema"
)

// scriptSetup gives every script $REPO (the repository root, for the
// examples) and $WS_ID, the workspace identity a job's marker carries for
// the workspace $WORK/ws (nvfl:<job id>@$WS_ID), before it runs.
func scriptSetup(env *testscript.Env) error {
	env.Setenv("REPO", repoRoot())
	work := env.Getenv("WORK")
	if real, err := filepath.EvalSymlinks(work); err == nil {
		work = real
	}
	env.Setenv("WS_ID", schema.WorkspaceID(filepath.Join(work, "ws")))
	return nil
}
