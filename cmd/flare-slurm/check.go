package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/runtime/check"
)

func newCheckCommand(a *app) *cobra.Command {
	var workspace, junit, study string
	var only, skip []string
	var asJSON, keep bool
	var timeout time.Duration
	var gpus, nodes int
	cmd := &cobra.Command{
		Use:   "check --workspace W [--study NAME] [--gpus N] [--nodes N] [--only NAME,...] [--skip NAME,...] [--json] [--junit FILE]",
		Short: "Run the production acceptance probes as Slurm jobs and report pass/fail with evidence",
		Long: "check runs the Slurm launcher guide's production acceptance list on the cluster, as the\n" +
			"runtime account on the parent host: each probe is one job submitted through the same compile\n" +
			"and runtime path as an NVFlare job, whose worker is a short probe program run by the\n" +
			"workspace's python_path. It prints one row per probe (pass, fail, warn or skip, seconds, Slurm\n" +
			"job id, evidence) and exits " + fmt.Sprint(exitCheckFailed) + " when a probe failed. Probe jobs are named check-<probe>-…;\n" +
			"every one still live at the end (timeout, Ctrl-C) is cancelled and its run dir removed, unless --keep.\n" +
			"Probes: " + strings.Join(check.Names(), ", ") + " (docs/check.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := check.Select(only, skip); err != nil {
				return usageErrorf("%v", err)
			}
			if nodes < 0 {
				return usageErrorf("--nodes must be 0 or more, got %d", nodes)
			}
			if gpus < 0 {
				return usageErrorf("--gpus must be 0 or more, got %d", gpus)
			}
			if timeout < 0 {
				return usageErrorf("--timeout must be positive, got %v", timeout)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			// A report that cannot be written would lose a long run's
			// results: refuse its path before any probe runs.
			if junit != "" {
				if err := writableDir(filepath.Dir(junit)); err != nil {
					return failure(errcode.InvalidOutput, fmt.Sprintf("--junit %s cannot be written: %v", junit, err), "give a path in an existing directory you can write", nil)
				}
			}
			// The bootstrap probe runs the scheduler checks: their failure is a row.
			rt, err := openSite(ctx, a, workspace, false, check.Environ(os.Environ()))
			if err != nil {
				return err
			}
			self, _ := os.Executable() // "" skips the restart probe, with that reason
			start := time.Now()
			rows, err := check.Run(ctx, rt, check.Options{Study: study, GPUs: gpus, Nodes: nodes, Self: self, Only: only, Skip: skip, Timeout: timeout, Keep: keep, Progress: a.stderr})
			if err != nil {
				return failure(errcode.CheckFailed, err.Error(), "nothing was submitted", nil)
			}
			seconds := time.Since(start).Seconds()
			if junit != "" {
				if err := writeJUnit(junit, "flare-slurm check", check.JUnitCases(rows)); err != nil {
					return err
				}
			}
			if asJSON {
				err = a.printOK(map[string]any{
					"workspace": rt.Workspace.Root,
					"study":     study,
					"probes":    rows,
					"summary":   check.Summarize(rows),
					"seconds":   float64(int64(seconds*1000)) / 1000,
				})
			} else {
				err = check.WriteTable(a.stdout, rows, seconds)
			}
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return &cliError{exit: exitCheckFailed, Code: errcode.CheckFailed, Message: "check was interrupted; its probe jobs were cancelled", resultOnly: true}
			}
			if check.Summarize(rows).Fail > 0 {
				return &cliError{exit: exitCheckFailed, Code: errcode.CheckFailed, Message: check.SummaryLine(rows, seconds), resultOnly: true}
			}
			return nil
		},
	}
	f := cmd.Flags()
	bindWorkspace(a, cmd, &workspace, "prepared runtime workspace")
	f.StringVar(&study, "study", "", "run the probes as jobs of this study of local/study_runtime.yaml (its image, env, secrets, mounts, Slurm settings)")
	f.IntVar(&nodes, "nodes", 0, "nodes the multi-node probe asks for (below 2: the probe is skipped)")
	f.IntVar(&gpus, "gpus", 0, "GPUs per node the gpus probe asks for (0: the probe is skipped)")
	f.StringSliceVar(&only, "only", nil, "run only these probes (`NAME,...`)")
	f.StringSliceVar(&skip, "skip", nil, "do not run these probes (`NAME,...`)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.StringVar(&junit, "junit", "", "also write a JUnit XML report (one test case per probe) to `FILE`")
	f.DurationVar(&timeout, "timeout", check.DefaultTimeout, "bound on the whole run; probe jobs still live then are cancelled")
	f.BoolVar(&keep, "keep", false, "keep the probes' run dirs and leave jobs still live at the end alone")
	return cmd
}

// writableDir says why dir cannot take a new file, or nil.
func writableDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return unix.Access(dir, unix.W_OK)
}
