// Command flare-slurm validates NVFlare Slurm configs, prepares runtime
// workspaces, compiles jobs into batch scripts and runs them on Slurm.
// This package only wires flags to the packages that do the work.
package main

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// app carries the streams every subcommand writes to, so tests can run the
// CLI in-process.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// commands holds the constructors of the subcommands; each subcommand's
// file registers its own in an init function.
var commands []func(*app) *cobra.Command

// Main runs the CLI and returns the process exit code: 0 success, 1 a
// failure or invalid input, 2 a usage error.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "flare-slurm",
		Short:         "Run NVFlare job processes as Slurm batch jobs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		// cobra's own errors (unknown command, bad arguments) are usage errors.
		ce = &cliError{exit: 2, Code: "usage", Message: err.Error(), Hint: "run 'flare-slurm --help' for usage"}
	}
	a.reportError(cmd, ce)
	return ce.exit
}
