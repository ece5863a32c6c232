package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/procmem"
	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
)

// memoryReleaseInterval is how often a wait process collects its garbage
// and returns the freed pages: half the default poll interval, so it holds
// about one poll's garbage at most.
const memoryReleaseInterval = 5 * time.Second

func newWaitCommand(a *app) *cobra.Command {
	var t jobTarget
	var follow bool
	cmd := t.bind(a, &cobra.Command{
		Use:   "wait --workspace W (--job-id ID | --follow)",
		Short: "Poll a job until it ends and print its NVFlare return code",
		Long: "wait polls once per poll interval until the job is terminal, prints the result and\n" +
			"exits with the job's NVFlare return code: 0 on success, otherwise non-zero (1, 9, 101-104).\n" +
			"Any number of wait processes on one workspace share one squeue per poll interval.\n" +
			"While the job is pending, wait says on stderr why, each time Slurm's reason changes\n" +
			"(Priority, Resources, QOSMaxJobsPerUser, ...), with how long it has waited of its\n" +
			"pending timeout.\n" +
			"--follow reads job ids from standard input, one a line, watches them all in this one\n" +
			"process and prints each job's result when it ends (with --json one compact JSON line per\n" +
			"job: the status envelope, or an error envelope whose data names the job id); it ends when\n" +
			"standard input is closed and every job it was given has ended, exiting 1 when a job\n" +
			"could not be watched; it says on stderr why each pending job waits, as wait does. The\n" +
			"launcher bridge runs one per NVFlare parent, and launches through it: with --json the\n" +
			"first line says so ({\"command\": \"hello\", ...}), an input line 'launch TAG ENVIRON REQUEST'\n" +
			"(ENVIRON a JSON array of NAME=value) is launched in this process as 'launch --request -\n" +
			"--attach --no-bootstrap' would in a process with that environment, and answered by one\n" +
			"line (launch's envelope with data.job_id, \"command\": \"launch\" and the tag); 'stop TAG'\n" +
			"stops that launch before it submits, as SIGTERM stops a launch process.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A wait lives as long as its job(s): keep it small
			// (internal/procmem).
			procmem.OneP()
			procmem.SmallHeap()
			if follow {
				return a.waitFollow(cmd, t)
			}
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			procmem.ReleaseEvery(cmd.Context(), memoryReleaseInterval, nil)
			st, err := h.WaitReporting(cmd.Context(), a.pendingReporter())
			if err != nil {
				return runtimeFailure(errcode.WaitFailed, err, "the job was not changed; run wait again to keep watching it")
			}
			if err := a.emit(cmd, st, func(w io.Writer) { printStatus(w, st) }); err != nil {
				return err
			}
			if st.ReturnCode == 0 {
				return nil
			}
			// The result is already on stdout (the ok envelope with --json).
			return resultExit(st.ReturnCode, fmt.Sprintf("job %s ended %s with return code %d", st.JobID, st.State, st.ReturnCode))
		},
	})
	cmd.Flags().BoolVar(&follow, "follow", false, "watch the jobs whose ids arrive on standard input, one a line (instead of --job-id)")
	return cmd
}

// openJobFailure is the error of a job that cannot be opened (status,
// wait, cancel, and each job of wait --follow).
func openJobFailure(jobID, workspace string, err error) error {
	if errors.Is(err, manager.ErrNoJob) {
		return failure(errcode.NoSuchJob, fmt.Sprintf("job %s: no live handle and no recorded result in workspace %s", jobID, workspace),
			"check the job id; results of finished jobs are kept for 7 days", nil)
	}
	return runtimeFailure(errcode.NoSuchJob, err, "check the job id; 'flare-slurm gc --workspace "+shell.Quote(workspace)+"' lists the job dirs of the workspace")
}
