package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/site"
	"github.com/flare-slurm/flare-slurm/schema"
)

func newLaunchCommand(a *app) *cobra.Command {
	var workspace, request string
	var attach, noBootstrap bool
	cmd := &cobra.Command{
		Use:   "launch --workspace W --request FILE|-",
		Short: "Compile a launch request and submit it as one Slurm batch job",
		Long: "launch runs the parent's bootstrap checks, compiles the launch request (a file, or - for\n" +
			"standard input so that credentials never touch disk) and submits it once with sbatch.\n" +
			"--attach: when the job is already running from this workspace (its handle is recorded, e.g.\n" +
			"by a parent before its restart), report that job (\"attached\": true) instead of refusing;\n" +
			"nothing is submitted. The launcher bridge of an NVFlare parent always passes it.\n" +
			"--no-bootstrap skips the Slurm version check and the accounting probe (the caller ran\n" +
			"bootstrap-check, as the launcher bridge does when its parent starts; NVFlare's own launcher\n" +
			"also probes once per parent): the commands are still resolved and checked.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if request == "" {
				return usageErrorf("--request is required (a file, or - for standard input)")
			}
			data, err := compile.ReadRequest(request, a.stdin)
			if err != nil {
				return failure(errcode.InvalidRequest, fmt.Sprintf("cannot read launch request %s: %v", request, err), "pass a JSON file, or - for standard input", nil)
			}
			// SIGINT, SIGTERM and SIGHUP (the bridge giving up) stop a
			// launch before it submits; once sbatch runs, the launch ends
			// with the job's handle written (or the job cancelled), and
			// prints its answer (issue 25 item 11).
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			rt, err := openSite(ctx, a, workspace, !noBootstrap, os.Environ())
			if err != nil {
				return err
			}
			h, attached, notes, err := launchJob(ctx, rt, request, data, attach)
			a.printNotes(notes)
			if err != nil {
				return err
			}
			info := h.Info()
			return a.emit(cmd, launchData(rt, h, notes, attached), func(w io.Writer) {
				if !attached {
					fmt.Fprintf(w, "job %s submitted as Slurm job %s (job name %s, artifacts %s)\n",
						info.JobID, info.SlurmJobID, info.JobName, rt.Manager.JobDir(info.JobID))
				} else if st, perr := h.Poll(cmd.Context()); perr == nil && st.Terminal {
					fmt.Fprintf(w, "job %s already ran as Slurm job %s and ended %s (return code %d): attached, nothing submitted\n",
						info.JobID, st.SlurmJobID, st.State, st.ReturnCode)
				} else {
					fmt.Fprintf(w, "job %s is already running as Slurm job %s (job name %s, artifacts %s): attached, nothing submitted\n",
						info.JobID, info.SlurmJobID, info.JobName, rt.Manager.JobDir(info.JobID))
				}
			})
		},
	}
	bindWorkspace(a, cmd, &workspace, "prepared runtime workspace")
	cmd.Flags().StringVar(&request, "request", "", "launch request file, or - for standard input (required)")
	bindJSON(cmd)
	cmd.Flags().BoolVar(&noBootstrap, "no-bootstrap", false, "skip the version check and accounting probe (the caller ran bootstrap-check)")
	cmd.Flags().BoolVar(&attach, "attach", false, "report the job instead of refusing or resubmitting it when this workspace runs it or ran it to a recorded result")
	return cmd
}

// launchJob compiles the launch request (request names it in messages)
// and submits it once, or, with attach, reports the job this workspace
// already runs or ran: launch's action, which wait --follow runs too for
// the launcher bridge. Its error is launch's (invalid_request with the
// problems, or launch_failed).
func launchJob(ctx context.Context, rt *site.Runtime, request string, data []byte, attach bool) (h *manager.Handle, attached bool, notes []string, err error) {
	if attach {
		h, attached, notes, err = rt.LaunchOrAttach(ctx, request, data)
	} else {
		h, notes, err = rt.LaunchWithNotes(ctx, request, data)
	}
	if err != nil {
		var ps schema.Problems
		if errors.As(err, &ps) {
			return nil, false, notes, failure(errcode.InvalidRequest, fmt.Sprintf("launch request %s cannot be compiled", request), "fix the problems listed", ps)
		}
		return nil, false, notes, runtimeFailure(errcode.LaunchFailed, err, "nothing was submitted; fix the cause above and launch again")
	}
	return h, attached, notes, nil
}

func launchData(rt *site.Runtime, h *manager.Handle, notes []string, attached bool) map[string]any {
	info := h.Info()
	return map[string]any{
		"slurm_job_id": info.SlurmJobID,
		"job_name":     info.JobName,
		"job_dir":      rt.Manager.JobDir(info.JobID),
		"notes":        orEmpty(notes),
		"attached":     attached,
	}
}
