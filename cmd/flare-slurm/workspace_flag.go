package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/schema"
)

// bindWorkspace registers --workspace (a prepared workspace the command
// uses, not one it creates: prepare has its own) on cmd: without the flag,
// the value of schema.EnvWorkspace is used, and a note on stderr names
// it, so that a command never acts on a workspace the operator did not see
// named. The flag's default stays empty, so help and the generated
// reference never depend on the environment.
func bindWorkspace(a *app, cmd *cobra.Command, ws *string, usage string) {
	cmd.Flags().StringVar(ws, "workspace", "", usage+" (required; default: $"+schema.EnvWorkspace+")")
	cmd.PreRunE = func(c *cobra.Command, _ []string) error {
		if v := schema.WorkspaceFromEnv(); v != "" && !c.Flags().Changed("workspace") {
			// Set, not assigned: a required --workspace counts as given.
			if err := c.Flags().Set("workspace", v); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "flare-slurm: note: --workspace %s (from %s)\n", visible.Quote(v), schema.EnvWorkspace)
		}
		return nil
	}
}
