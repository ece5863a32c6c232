package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// newWaitCommand builds `flare-slurm wait`.
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
			"launcher bridge runs one per NVFlare parent.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A wait lives as long as its job(s): keep it small
			// (internal/procmem).
			procmem.OneP()
			if follow {
				return a.waitFollow(cmd, t)
			}
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
	cmd.Flags().BoolVar(&follow, "follow", false, "watch the jobs whose ids arrive on standard input, one a line (instead of --job-id)")
	return cmd
}

// waitFollow is wait --follow: manager.Follow fed from standard input, one
// report per job as it ends.
func (a *app) waitFollow(cmd *cobra.Command, t jobTarget) error {
	if t.jobID != "" {
		return usageErrorf("--follow and --job-id exclude each other: --follow reads the job ids from standard input")
	}
	rt, err := openSite(cmd.Context(), a, t.workspace, false)
	if err != nil {
		return err
	}
	procmem.ReleaseEvery(cmd.Context(), memoryReleaseInterval)
	// Buffered: ids keep arriving while Follow sleeps between polls.
	ids := make(chan string, 4096)
	go func() {
		defer close(ids)
		sc := bufio.NewScanner(a.stdin)
		for sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				ids <- id
			}
		}
	}()
	failed := 0
	var writeErr error
	pending := map[string]func(manager.Status){} // job id → its reporter (reason changes)
	progress := func(st manager.Status) {
		r := pending[st.JobID]
		if r == nil {
			r = a.pendingReporter()
			pending[st.JobID] = r
		}
		r(st)
	}
	err = rt.Manager.Follow(cmd.Context(), ids, progress, func(jobID string, st manager.Status, err error) {
		delete(pending, jobID)
		if err != nil {
			failed++
			var ce *cliError
			if !errors.As(openJobFailure(jobID, t.workspace, err), &ce) {
				return
			}
			if t.asJSON {
				writeErr = errors.Join(writeErr, a.writeLine(envelope{Status: "error", Data: map[string]string{"job_id": jobID}, Error: ce}))
			} else {
				fmt.Fprintf(a.stderr, "flare-slurm: error: %s\nflare-slurm: hint: %s\n", ce.Message, ce.Hint)
			}
			return
		}
		if t.asJSON {
			writeErr = errors.Join(writeErr, a.writeLine(envelope{Status: "ok", Data: st}))
		} else {
			writeErr = errors.Join(writeErr, a.printStatus(st, false))
		}
	})
	if err != nil {
		return runtimeFailure(errcode.WaitFailed, err, "the jobs were not changed; run wait again to keep watching them")
	}
	if writeErr != nil {
		return failure(errcode.WaitFailed, "writing the results: "+writeErr.Error(), "", nil)
	}
	if failed > 0 {
		return resultExit(exitFailure, fmt.Sprintf("%d job(s) could not be watched", failed))
	}
	return nil
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

// writeLine writes v as one compact JSON line (wait --follow's stream).
func (a *app) writeLine(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
