package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
)

// newCancelCommand builds `flare-slurm cancel`.
func newCancelCommand(a *app) *cobra.Command {
	var t jobTarget
	return t.bind(&cobra.Command{
		Use:   "cancel --workspace W --job-id ID",
		Short: "Abort a job: record a user abort, verify ownership, then scancel it",
		Long: "cancel records a user abort in the job dir (so every wait reports 9 once the job ends),\n" +
			"re-verifies with squeue that the Slurm job is this workspace's, and runs scancel -Q --me.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			st, err := h.Terminate(cmd.Context())
			if errors.Is(err, manager.ErrCancelPending) {
				return failure(errcode.CancelPending, fmt.Sprintf("job %s: %v", t.jobID, err),
					"the abort stays recorded: a running wait (or any status) on this workspace sends scancel once squeue proves the job is ours", nil)
			}
			if err != nil {
				return runtimeFailure(errcode.CancelFailed, err, "run cancel again; check the job with 'flare-slurm status' (and 'squeue --me') first")
			}
			return a.printStatus(st, t.asJSON)
		},
	})
}
