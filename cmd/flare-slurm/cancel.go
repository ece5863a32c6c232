package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
)

func newCancelCommand(a *app) *cobra.Command {
	var t jobTarget
	var allLive, cleanup bool
	cmd := t.bind(a, &cobra.Command{
		Use:   "cancel --workspace W (--job-id ID | --all-live)",
		Short: "Abort a job: record a user abort, verify ownership, then scancel it",
		Long: "cancel records a user abort in the job dir (so every wait reports 9 once the job ends),\n" +
			"re-verifies with squeue that the Slurm job is this workspace's, and runs scancel -Q --me.\n" +
			"--all-live does that for every job of the workspace that has not ended: the launcher\n" +
			"bridge runs it when an NVFlare parent starts, because NVFlare does not resume the jobs of\n" +
			"a previous parent process.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if allLive && cleanup {
				return usageErrorf("--cleanup applies to one job (--job-id), not to --all-live")
			}
			if allLive {
				// manager.TerminateLive, one line (or one JSON entry) per job it aborted.
				rt, err := t.openAll(cmd, a, "--all-live")
				if err != nil {
					return err
				}
				done, err := rt.Manager.TerminateLive(cmd.Context())
				if err != nil {
					return runtimeFailure(errcode.CancelFailed, err, "check the workspace with "+bootstrapCommand(t.workspace))
				}
				var failed []string
				for _, d := range done {
					if d.Error != "" {
						failed = append(failed, fmt.Sprintf("job %s (Slurm job %s): %s", d.JobID, d.SlurmJobID, d.Error))
					}
				}
				if failed != nil {
					return failure(errcode.CancelFailed, fmt.Sprintf("%d of %d live jobs could not be cancelled: %s", len(failed), len(done), strings.Join(failed, "; ")),
						"run cancel --all-live again; check the jobs with 'flare-slurm status --workspace "+shell.Quote(t.workspace)+" --all-live' (and 'squeue --me') first", nil)
				}
				return printJobs(a, cmd, done, func(d manager.LiveTermination) {
					fmt.Fprintf(a.stdout, "job %s (Slurm job %s): %s, return code %d\n", d.JobID, d.SlurmJobID, d.State, d.ReturnCode)
				}, "no live job in the workspace")
			}
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			terminate := h.Terminate
			if cleanup {
				terminate = h.TerminateForCleanup
			}
			st, err := terminate(cmd.Context())
			if errors.Is(err, manager.ErrCancelPending) {
				return failure(errcode.CancelPending, fmt.Sprintf("job %s: %v", t.jobID, err),
					"the abort stays recorded: a running wait (or any status) on this workspace sends scancel once squeue proves the job is ours", nil)
			}
			if err != nil {
				return runtimeFailure(errcode.CancelFailed, err, "run cancel again; check the job with 'flare-slurm status --workspace "+shell.Quote(t.workspace)+" --job-id "+shell.Quote(t.jobID)+"' (and 'squeue --me') first")
			}
			return a.emit(cmd, st, func(w io.Writer) { printStatus(w, st) })
		},
	})
	cmd.Flags().BoolVar(&allLive, "all-live", false, "cancel every job of the workspace that has not ended (instead of --job-id)")
	cmd.Flags().BoolVar(&cleanup, "cleanup", false, "the abort is not a user's (NVFlare's heartbeat clean-up): the job ends with 104, not 9")
	return cmd
}
