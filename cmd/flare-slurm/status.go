package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/site"
)

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
			if all || allLive {
				// One line (or one JSON entry) per job, none when there is no job.
				flag, list, none := "--all", (*manager.Manager).AllStatuses, "no job in the workspace (results are kept for 7 days)"
				line := func(st manager.Status) { printStatus(a.stdout, st) }
				if allLive {
					// A job not finished: no return code, no detail.
					flag, list, none = "--all-live", (*manager.Manager).LiveStatuses, "no live job in the workspace"
					line = func(st manager.Status) {
						fmt.Fprintf(a.stdout, "job %s (Slurm job %s): %s, not finished\n", st.JobID, st.SlurmJobID, st.State)
						if p := st.Pending(time.Now()); p != "" {
							fmt.Fprintf(a.stdout, "  %s\n", visible.Lines(p))
						}
					}
				}
				rt, err := t.openAll(cmd, a, flag)
				if err != nil {
					return err
				}
				jobs, err := list(rt.Manager, cmd.Context())
				if err != nil {
					return runtimeFailure(errcode.StatusFailed, err, "check the workspace with "+bootstrapCommand(t.workspace))
				}
				return printJobs(a, cmd, jobs, line, none)
			}
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			st, err := h.Poll(cmd.Context())
			if err != nil {
				return runtimeFailure(errcode.StatusFailed, err, "the job keeps its last known state; run status again, or "+bootstrapCommand(t.workspace)+" to check the Slurm commands")
			}
			return a.emit(cmd, st, func(w io.Writer) { printStatus(w, st) })
		},
	})
	cmd.Flags().BoolVar(&allLive, "all-live", false, "print every job of the workspace that has not ended (instead of --job-id)")
	cmd.Flags().BoolVar(&all, "all", false, "print every job the workspace knows, live and recorded results (instead of --job-id)")
	return cmd
}

// printJobs prints the jobs of a listing: {"jobs": [...]} with --json,
// else line per job, or none when there is no job.
func printJobs[J any](a *app, cmd *cobra.Command, jobs []J, line func(J), none string) error {
	return a.emit(cmd, map[string]any{"jobs": jobs}, func(w io.Writer) {
		for _, j := range jobs {
			line(j)
		}
		if len(jobs) == 0 {
			fmt.Fprintln(w, none)
		}
	})
}

// printStatus is a job's status as text (status, wait, cancel).
func printStatus(w io.Writer, st manager.Status) {
	end := fmt.Sprintf("return code %d", st.ReturnCode)
	if !st.Terminal {
		end = "not finished (" + end + ")"
	}
	fmt.Fprintf(w, "job %s (Slurm job %s): %s, %s\n", st.JobID, st.SlurmJobID, st.State, end)
	if st.Detail != "" {
		fmt.Fprintf(w, "  %s\n", st.Detail)
	}
	if p := st.Pending(time.Now()); p != "" {
		fmt.Fprintf(w, "  %s\n", visible.Lines(p))
	}
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

// openAll opens the workspace for flag, a mode that acts on every job of
// it (status --all and --all-live, cancel --all-live): --job-id is refused.
func (t *jobTarget) openAll(cmd *cobra.Command, a *app, flag string) (*site.Runtime, error) {
	if t.jobID != "" {
		return nil, usageErrorf("%s and --job-id exclude each other", flag)
	}
	return openSite(cmd.Context(), a, t.workspace, false, os.Environ())
}

// open opens the workspace without the bootstrap's scheduler checks and
// finds the job's handle.
func (t *jobTarget) open(cmd *cobra.Command, a *app) (*manager.Handle, error) {
	if t.jobID == "" {
		return nil, usageErrorf("--job-id is required")
	}
	rt, err := openSite(cmd.Context(), a, t.workspace, false, os.Environ())
	if err != nil {
		return nil, err
	}
	h, err := rt.Manager.Open(t.jobID)
	if err != nil {
		return nil, openJobFailure(t.jobID, t.workspace, err)
	}
	return h, nil
}
