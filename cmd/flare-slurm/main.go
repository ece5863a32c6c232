// Command flare-slurm validates NVFlare Slurm configs, prepares runtime
// workspaces, compiles jobs into batch scripts and runs them on Slurm.
// This package only wires flags to the packages that do the work.
package main

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/procmem"
)

func main() {
	procmem.NoProfiling()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// app carries the streams every subcommand writes to, so tests can run the
// CLI in-process.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// subcommands are the constructors of every subcommand (help lists them
// sorted by name).
var subcommands = []func(*app) *cobra.Command{
	newBootstrapCheckCommand,
	newCancelCommand,
	newCheckCommand,
	newCompletionCommand,
	newExplainCommand,
	newFmtCommand,
	newGcCommand,
	newInitCommand,
	newLaunchCommand,
	newLogsCommand,
	newPrepareCommand,
	newRenderCommand,
	newSchemaCommand,
	newStatusCommand,
	newValidateCommand,
	newVersionCommand,
	newWaitCommand,
}

// Main runs the CLI and returns the process exit code: 0 success, 1 a
// failure or invalid input, 2 a usage error, 3 drift (prepare --check), 4 a
// check probe failed;
// wait and launch exit with the job's return code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCommand(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteC() // cmd is never nil: the root when no subcommand was found
	if err == nil {
		return 0
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		// cobra's own errors (unknown command, bad arguments) are usage errors.
		ce = &cliError{exit: exitUsage, Code: errcode.Usage, Message: err.Error()}
	}
	if ce.Code == errcode.Usage && ce.Hint == "" {
		// The help of the subcommand that was run (flare-slurm validate
		// --help), the root's only when no subcommand was recognised.
		ce.Hint = "run '" + cmd.CommandPath() + " --help' for usage"
	}
	a.reportError(cmd, ce)
	return ce.exit
}

// newRootCommand builds the whole command tree on a's streams: Main runs
// it, and the command reference (make docs) is generated from it, so
// --help, the man pages and docs/cli never disagree.
func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "flare-slurm",
		Short: "Run NVFlare job processes as Slurm batch jobs",
		Long: `flare-slurm lets an HPC site run the job processes of an NVFlare federation as Slurm
batch jobs.

Site and study admins start, read and check their inputs, then build the runtime workspace:

    flare-slurm init site-1/ --output slurm.yaml       # a commented config for the kit
    flare-slurm explain job_launcher.sandbox           # what one key means
    flare-slurm validate --kit site-1/ slurm.yaml      # the pair, as prepare reads it
    flare-slurm prepare site-1 --config slurm.yaml     # the workspace the NVFlare parent starts from

Reviewers see exactly what a job would run, without submitting it:

    flare-slurm render --workspace W --request req.json --output review/

The NVFlare parent, and operators, run, watch and stop jobs:

    flare-slurm launch | status | wait | cancel | logs --workspace W ...
    flare-slurm bootstrap-check --workspace W;  flare-slurm gc --workspace W

Errors go to stderr as "flare-slurm: error: ..." and "flare-slurm: hint: ...". With --json,
a command prints one JSON document on stdout. Exit status: 0 success, 1 failure or invalid
input, 2 usage error; wait exits with the job's NVFlare return code.`,
		// --version prints what the version command prints; without it
		// the root command prints its help.
		RunE: func(cmd *cobra.Command, _ []string) error {
			if show, _ := cmd.Flags().GetBool("version"); show {
				return currentBuild().writeText(a.stdout)
			}
			return cmd.Help()
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Flags().Bool("version", false, "print the version (as 'flare-slurm version' does)")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	root.CompletionOptions.DisableDefaultCmd = true // completion.go has our own
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd(a))
	}
	addDocsCommand(root, a)
	addCompletions(root)
	return root
}
