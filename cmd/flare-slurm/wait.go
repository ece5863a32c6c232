package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/procmem"
)

// memoryReleaseInterval is how often a wait process collects its garbage
// and returns the freed pages: half the default poll interval, so it holds
// about one poll's garbage at most.
const memoryReleaseInterval = 5 * time.Second

// newWaitCommand builds `flare-slurm wait`.
func newWaitCommand(a *app) *cobra.Command {
	var t jobTarget
	return t.bind(a, &cobra.Command{
		Use:   "wait --workspace W --job-id ID",
		Short: "Poll a job until it ends and print its NVFlare return code",
		Long: "wait polls once per poll interval (±10 %) until the job is terminal, prints the result and\n" +
			"exits with the job's NVFlare return code: 0 on success, otherwise non-zero (1, 9, 101-104).\n" +
			"Any number of wait processes on one workspace share one squeue per poll interval.\n" +
			"While the job is pending, wait says on stderr why, each time Slurm's reason changes\n" +
			"(Priority, Resources, QOSMaxJobsPerUser, ...), with how long it has waited of its\n" +
			"pending timeout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A wait lives as long as its job, one process per job:
			// keep it small (internal/procmem).
			procmem.OneP()
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			procmem.ReleaseEvery(cmd.Context(), memoryReleaseInterval)
			st, err := h.WaitReporting(cmd.Context(), a.pendingReporter())
			if err != nil {
				return runtimeFailure(errcode.WaitFailed, err, "the job was not changed; run wait again to keep watching it")
			}
			if err := a.printStatus(st, t.asJSON); err != nil {
				return err
			}
			if st.ReturnCode == 0 {
				return nil
			}
			// The result is already on stdout (the ok envelope with --json).
			return resultExit(st.ReturnCode, fmt.Sprintf("job %s ended %s with return code %d", st.JobID, st.State, st.ReturnCode))
		},
	})
}
