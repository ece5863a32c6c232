//go:build !gendocs

package main

import "github.com/spf13/cobra"

// addDocsCommand adds nothing here: only the generator build (docs_cmd.go,
// go build -tags gendocs) adds the hidden command that writes the command
// reference (docs/cli and the man pages; make docs, make dist), so the
// flare-slurm binary users run does not link the Markdown and roff
// renderers nor pay for their initialisation at every start.
func addDocsCommand(*cobra.Command, *app) {}
