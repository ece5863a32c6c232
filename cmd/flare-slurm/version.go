package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the flare-slurm version",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				_, err := fmt.Fprintf(a.stdout, "flare-slurm %s\n", version)
				return err
			},
		}
	})
}
