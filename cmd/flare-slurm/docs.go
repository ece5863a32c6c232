package main

import "github.com/spf13/cobra"

// docsCommand, when set, adds the hidden command that writes the command
// reference (docs/cli and the man pages; make docs, make dist). Only the
// generator build sets it (docs_cmd.go, go build -tags gendocs), so the
// flare-slurm binary users run does not link the Markdown and roff
// renderers nor pay for their initialisation at every start.
var docsCommand func(*app) *cobra.Command
