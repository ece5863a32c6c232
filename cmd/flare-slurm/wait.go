package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/procmem"
	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/schema"
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
			"launcher bridge runs one per NVFlare parent, and launches through it: an input line\n" +
			"{\"tag\": T, \"launch\": REQUEST} is launched as 'launch --request - --attach --no-bootstrap'\n" +
			"would, in this process, and answered by one line (launch's envelope with data.job_id,\n" +
			"\"command\": \"launch\" and the tag); {\"stop\": T} stops that launch before it submits, as\n" +
			"SIGTERM stops a launch process.",
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
// report per job as it ends. A line that is a JSON object is a launch for
// the launcher bridge (followControl), run in this process beside the
// watching: no process start and no schema compile per job.
func (a *app) waitFollow(cmd *cobra.Command, t jobTarget) error {
	if t.jobID != "" {
		return usageErrorf("--follow and --job-id exclude each other: --follow reads the job ids from standard input")
	}
	// SIGINT, SIGTERM and SIGHUP stop each launch in progress before it
	// submits (one whose sbatch runs ends with its handle written, and
	// answers, as a launch process does), then this process.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	rt, err := openSite(ctx, a, t.workspace, false)
	if err != nil {
		return err
	}
	procmem.ReleaseEvery(ctx, memoryReleaseInterval)
	var mu sync.Mutex // stdout's one writer; failed, writeErr and stops
	failed := 0
	var writeErr error
	write := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		writeErr = errors.Join(writeErr, a.writeLine(v))
	}
	stops := map[string]context.CancelFunc{} // launch tag → stops it
	var launches sync.WaitGroup
	launch := func(c followControl) {
		lctx, cancel := context.WithCancel(ctx)
		mu.Lock()
		stops[c.Tag] = cancel
		mu.Unlock()
		launches.Go(func() {
			defer func() {
				mu.Lock()
				delete(stops, c.Tag)
				mu.Unlock()
				cancel()
			}()
			h, attached, notes, err := launchJob(lctx, rt, "-", c.Launch, true)
			a.printNotes(notes)
			answer := launchAnswer{Command: "launch", Tag: c.Tag}
			var ce *cliError
			switch {
			case err == nil:
				data := launchData(rt, h, notes, attached)
				data["job_id"] = h.Info().JobID
				answer.Status, answer.Data = "ok", data
			case errors.As(err, &ce):
				answer.Status, answer.Error = "error", ce
			default:
				answer.Status, answer.Error = "error", &cliError{Code: errcode.LaunchFailed, Message: err.Error()}
			}
			write(answer)
		})
	}
	// Buffered: ids keep arriving while Follow sleeps between polls.
	ids := make(chan string, 4096)
	go func() {
		defer close(ids)
		sc := bufio.NewScanner(a.stdin)
		sc.Buffer(make([]byte, 0, 64<<10), followLineMax)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "{") {
				if line != "" {
					ids <- line
				}
				continue
			}
			var c followControl
			switch err := json.Unmarshal([]byte(line), &c); {
			case err != nil || (c.Launch == nil) == (c.Stop == ""):
				fmt.Fprintf(a.stderr, "flare-slurm: error: standard input: a JSON line must be {\"tag\": T, \"launch\": REQUEST} or {\"stop\": T}; line ignored\n")
				if c.Launch != nil && c.Tag != "" {
					write(launchAnswer{Status: "error", Command: "launch", Tag: c.Tag, Error: &cliError{Code: errcode.InvalidRequest,
						Message: "launch line of wait --follow is not {\"tag\": T, \"launch\": REQUEST}", Hint: "send one JSON object a line"}})
				}
			case c.Stop != "":
				mu.Lock()
				if cancel := stops[c.Stop]; cancel != nil {
					cancel()
				}
				mu.Unlock()
			default:
				launch(c)
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(a.stderr, "flare-slurm: error: reading standard input: %v (no more jobs are taken; those given are watched to their end)\n", err)
		}
	}()
	pending := map[string]func(manager.Status){} // job id → its reporter (reason changes)
	progress := func(st manager.Status) {
		r := pending[st.JobID]
		if r == nil {
			r = a.pendingReporter()
			pending[st.JobID] = r
		}
		r(st)
	}
	err = rt.Manager.Follow(ctx, ids, progress, func(jobID string, st manager.Status, err error) {
		delete(pending, jobID)
		if err != nil {
			mu.Lock()
			failed++
			mu.Unlock()
			var ce *cliError
			if !errors.As(openJobFailure(jobID, t.workspace, err), &ce) {
				return
			}
			if t.asJSON {
				write(envelope{Status: "error", Data: map[string]string{"job_id": jobID}, Error: ce})
			} else {
				fmt.Fprintf(a.stderr, "flare-slurm: error: %s\nflare-slurm: hint: %s\n", ce.Message, ce.Hint)
			}
			return
		}
		if t.asJSON {
			write(envelope{Status: "ok", Data: st})
		} else {
			mu.Lock()
			writeErr = errors.Join(writeErr, a.printStatus(st, false))
			mu.Unlock()
		}
	})
	// Every launch answers before this process ends.
	launches.Wait()
	if err != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
		return failure(errcode.WaitFailed, "stopped by a signal before every job it was given ended", "the jobs were not changed; run wait again to keep watching them", nil)
	}
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

// followLineMax bounds one line of wait --follow's input: a launch line
// holds a request of at most schema.MaxInputBytes.
const followLineMax = schema.MaxInputBytes + 4<<10

// followControl is a JSON line of wait --follow's input: a launch request
// to run in this process as `launch --request - --attach --no-bootstrap`
// would ({"tag": T, "launch": REQUEST}), or the bridge giving up on the
// launch of tag T ({"stop": T}: as SIGTERM to a launch process).
type followControl struct {
	Tag    string          `json:"tag"`
	Launch json.RawMessage `json:"launch"`
	Stop   string          `json:"stop"`
}

// launchAnswer is the output line of a launch line: launch's envelope
// (its data with the job_id added), marked "command": "launch" and with
// the line's tag.
type launchAnswer struct {
	Status  string    `json:"status"`
	Command string    `json:"command"`
	Tag     string    `json:"tag"`
	Data    any       `json:"data,omitempty"`
	Error   *cliError `json:"error,omitempty"`
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
