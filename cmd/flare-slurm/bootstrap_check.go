package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
	"github.com/flare-slurm/flare-slurm/runtime/site"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

func newBootstrapCheckCommand(a *app) *cobra.Command {
	var workspace string
	cmd := &cobra.Command{
		Use:   "bootstrap-check --workspace W",
		Short: "Check a workspace and the Slurm commands exactly as a parent's bootstrap does",
		Long: "bootstrap-check resolves sbatch, squeue, sacct and scancel, requires Slurm 23.02.3 or later,\n" +
			"probes accounting, validates the workspace and creates .nvflare_slurm/jobs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rt, err := openSite(cmd.Context(), a, workspace, true, os.Environ())
			if err != nil {
				return err
			}
			p := rt.Client.Paths
			data := map[string]any{
				"workspace":     rt.Workspace.Root,
				"site":          rt.Workspace.Site,
				"role":          rt.Workspace.Role,
				"slurm_version": rt.Version.String(),
				"executables":   map[string]string{"sbatch": p.Sbatch, "squeue": p.Squeue, "sacct": p.Sacct, "scancel": p.Scancel},
				"accounting":    "ok",
				"jobs_dir":      rt.Manager.JobsDir(),
			}
			// The bridge's parent runs the binary the workspace records.
			if b := rt.Workspace.Binary; b != "" {
				if msg := bridge.CheckBinary(b); msg != "" {
					return failure(errcode.BootstrapFailed, fmt.Sprintf("workspace %s: the parent's launcher cannot run flare-slurm", rt.Workspace.Root),
						bridge.BinaryHint, schema.Problems{{Kind: problem.Rule, File: rt.Workspace.ResourcesFile, Path: "slurm_launcher.args." + bridge.BinaryArg, Message: msg}})
				}
				data["flare_slurm"] = b
			}
			return a.emit(cmd, data, func(w io.Writer) {
				fmt.Fprintf(w, "workspace %s (%s %s) is ready\n", rt.Workspace.Root, rt.Workspace.Role, rt.Workspace.Site)
				fmt.Fprintf(w, "slurm %s; accounting answers\n", rt.Version)
				for _, n := range []struct{ k, v string }{{"sbatch", p.Sbatch}, {"squeue", p.Squeue}, {"sacct", p.Sacct}, {"scancel", p.Scancel}} {
					fmt.Fprintf(w, "%-8s %s\n", n.k, n.v)
				}
				if rt.Workspace.Binary != "" {
					fmt.Fprintf(w, "the parent's launcher runs %s\n", rt.Workspace.Binary)
				}
			})
		},
	}
	bindWorkspace(a, cmd, &workspace, "prepared runtime workspace")
	bindJSON(cmd)
	return cmd
}

// openSite opens the workspace for a runtime command, with the environment
// the workspace runs with; check runs the once-per-parent scheduler checks
// (version, accounting).
func openSite(ctx context.Context, a *app, workspace string, check bool, environ []string) (*site.Runtime, error) {
	if workspace == "" {
		return nil, usageErrorf("--workspace is required (or set %s)", schema.EnvWorkspace)
	}
	rt, err := site.Open(ctx, workspace, site.Options{
		Environ: environ,
		Logger: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{
			Level: slog.LevelWarn,
			// One line per event, without a timestamp: the caller's log adds its own.
			ReplaceAttr: func(groups []string, at slog.Attr) slog.Attr {
				if len(groups) == 0 && at.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return at
			},
		})),
		CheckScheduler: check,
	})
	if err != nil {
		var ps schema.Problems
		if errors.As(err, &ps) {
			return nil, failure(errcode.InvalidWorkspace, fmt.Sprintf("workspace %s is not a usable prepared workspace", workspace),
				"pass the --output directory of 'flare-slurm prepare' and fix the problems listed", ps)
		}
		var ces scheduler.CommandErrors
		if errors.As(err, &ces) {
			// One problem per command, at the settings entry that names it.
			ps := make(schema.Problems, 0, len(ces))
			for _, ce := range ces {
				ps = append(ps, schema.Problem{Kind: problem.Rule, File: ce.Settings, Path: "slurm_launcher.args.executables." + ce.Name,
					Message: ce.Error(), Hint: ce.Fix()})
			}
			return nil, failure(errcode.BootstrapFailed, fmt.Sprintf("%s of workspace %s cannot be used", plural(len(ces), "Slurm command"), workspace),
				"fix each as its line says, then run "+bootstrapCommand(workspace), ps)
		}
		return nil, runtimeFailure(errcode.BootstrapFailed, err, "fix the workspace or the Slurm setup, then run "+bootstrapCommand(workspace))
	}
	return rt, nil
}

// bootstrapCommand is the bootstrap-check command line of a workspace, as a
// hint names it, ready to paste.
func bootstrapCommand(workspace string) string {
	return "'flare-slurm bootstrap-check --workspace " + shell.Quote(workspace) + "'"
}

// runtimeFailure reports a runtime error with its own hint when it
// carries one (manager.Hint), else with fallback.
func runtimeFailure(code string, err error, fallback string) error {
	return failure(code, err.Error(), cmp.Or(manager.Hint(err), fallback), nil)
}
