package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
)

// newStatusCommand builds `flare-slurm status`.
func newStatusCommand(a *app) *cobra.Command {
	var t jobTarget
	var allLive, all bool
	cmd := t.bind(a, &cobra.Command{
		Use:   "status --workspace W (--job-id ID | --all | --all-live)",
		Short: "Print a job's state and, once it ended, its NVFlare return code",
		Long: "status prints the job's latest observed state (shared by every process on the workspace,\n" +
			"at most one poll interval old). The return code is 127 until the job is terminal.\n" +
			"--all-live prints every job of the workspace that has not ended (the launcher bridge\n" +
			"reports them when an NVFlare parent starts: NVFlare does not resume a previous parent\n" +
			"process's jobs).\n" +
			"--all prints every job the workspace knows: each job with a handle (live or ended) and each\n" +
			"recorded result (kept for 7 days), one line per job, sorted by job id.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all && allLive {
				return usageErrorf("--all and --all-live exclude each other")
			}
			if all {
				return a.statusAll(cmd, t)
			}
			if allLive {
				return a.statusAllLive(cmd, t)
			}
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			st, err := h.Poll(cmd.Context())
			if err != nil {
				return runtimeFailure(errcode.StatusFailed, err, "the job keeps its last known state; run status again, or "+bootstrapCommand(t.workspace)+" to check the Slurm commands")
			}
			return a.printStatus(st, t.asJSON)
		},
	})
	cmd.Flags().BoolVar(&allLive, "all-live", false, "print every job of the workspace that has not ended (instead of --job-id)")
	cmd.Flags().BoolVar(&all, "all", false, "print every job the workspace knows, live and recorded results (instead of --job-id)")
	return cmd
}

// statusAllLive is status --all-live: manager.LiveStatuses, one line (or
// one JSON entry) per job.
func (a *app) statusAllLive(cmd *cobra.Command, t jobTarget) error {
	if t.jobID != "" {
		return usageErrorf("--all-live and --job-id exclude each other")
	}
	rt, err := openSite(cmd.Context(), a, t.workspace, false)
	if err != nil {
		return err
	}
	live, err := rt.Manager.LiveStatuses(cmd.Context())
	if err != nil {
		return runtimeFailure(errcode.StatusFailed, err, "check the workspace with "+bootstrapCommand(t.workspace))
	}
	if t.asJSON {
		return a.printOK(map[string]any{"jobs": live})
	}
	for _, st := range live {
		fmt.Fprintf(a.stdout, "job %s (Slurm job %s): %s, not finished\n", st.JobID, st.SlurmJobID, st.State)
		if p := st.Pending(time.Now()); p != "" {
			fmt.Fprintf(a.stdout, "  %s\n", visible.Lines(p))
		}
	}
	if len(live) == 0 {
		fmt.Fprintln(a.stdout, "no live job in the workspace")
	}
	return nil
}

// statusAll is status --all: manager.AllStatuses, one line (or one JSON
// entry) per job.
func (a *app) statusAll(cmd *cobra.Command, t jobTarget) error {
	if t.jobID != "" {
		return usageErrorf("--all and --job-id exclude each other")
	}
	rt, err := openSite(cmd.Context(), a, t.workspace, false)
	if err != nil {
		return err
	}
	jobs, err := rt.Manager.AllStatuses(cmd.Context())
	if err != nil {
		return runtimeFailure(errcode.StatusFailed, err, "check the workspace with "+bootstrapCommand(t.workspace))
	}
	if t.asJSON {
		return a.printOK(map[string]any{"jobs": jobs})
	}
	for _, st := range jobs {
		if err := a.printStatus(st, false); err != nil {
			return err
		}
	}
	if len(jobs) == 0 {
		fmt.Fprintln(a.stdout, "no job in the workspace (results are kept for 7 days)")
	}
	return nil
}

// openJob opens the workspace without the bootstrap's scheduler checks and
// finds the job's handle.
func openJob(cmd *cobra.Command, a *app, workspace, jobID string) (*manager.Handle, error) {
	if jobID == "" {
		return nil, usageErrorf("--job-id is required")
	}
	rt, err := openSite(cmd.Context(), a, workspace, false)
	if err != nil {
		return nil, err
	}
	h, err := rt.Manager.Open(jobID)
	if err != nil {
		return nil, openJobFailure(jobID, workspace, err)
	}
	return h, nil
}

func (a *app) printStatus(st manager.Status, asJSON bool) error {
	if asJSON {
		return a.printOK(st)
	}
	if st.Terminal {
		fmt.Fprintf(a.stdout, "job %s (Slurm job %s): %s, return code %d\n", st.JobID, st.SlurmJobID, st.State, st.ReturnCode)
	} else {
		fmt.Fprintf(a.stdout, "job %s (Slurm job %s): %s, not finished (return code %d)\n", st.JobID, st.SlurmJobID, st.State, st.ReturnCode)
	}
	if st.Detail != "" {
		fmt.Fprintf(a.stdout, "  %s\n", st.Detail)
	}
	if p := st.Pending(time.Now()); p != "" {
		fmt.Fprintf(a.stdout, "  %s\n", visible.Lines(p))
	}
	return nil
}

// pendingReporter is what wait says on stderr while the job is pending:
// one line when Slurm's reason for the wait first shows or changes (the
// launcher bridge logs these lines as the parent's).
func (a *app) pendingReporter() func(manager.Status) {
	last := ""
	return func(st manager.Status) {
		if !manager.IsPending(st.State) || st.PendingSince.IsZero() || st.Reason == last {
			return
		}
		last = st.Reason
		fmt.Fprintf(a.stderr, "flare-slurm: job %s (Slurm job %s) %s\n", st.JobID, st.SlurmJobID, visible.Lines(st.Pending(time.Now())))
	}
}

// jobTarget holds the flags of the commands that act on one job of a
// workspace (status, wait, cancel).
type jobTarget struct {
	workspace, jobID string
	asJSON           bool
}

// bind registers --workspace, --job-id and --json on cmd and returns it.
func (t *jobTarget) bind(a *app, cmd *cobra.Command) *cobra.Command {
	bindWorkspace(a, cmd, &t.workspace, "prepared runtime workspace")
	cmd.Flags().StringVar(&t.jobID, "job-id", "", "NVFlare job id (required)")
	cmd.Flags().BoolVar(&t.asJSON, "json", false, "print the result as JSON")
	return cmd
}

// open finds the job's handle in the workspace.
func (t *jobTarget) open(cmd *cobra.Command, a *app) (*manager.Handle, error) {
	return openJob(cmd, a, t.workspace, t.jobID)
}
