package main

import (
	"cmp"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/runtime/manager"
)

func newGcCommand(a *app) *cobra.Command {
	var workspace string
	var yes bool
	cmd := &cobra.Command{
		Use:   "gc --workspace W [--yes]",
		Short: "List leftover job dirs and remove those whose allocation the scheduler confirms finished",
		Long: "gc asks squeue and sacct about every job dir under .nvflare_slurm/jobs. Without --yes it only\n" +
			"lists them; with --yes it removes the dirs the scheduler confirms finished. An unavailable\n" +
			"scheduler removes nothing. --json reports per dir what was done (action: removed, kept or\n" +
			"would_remove) and why (reason), and the counts removed and kept.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rt, err := openSite(cmd.Context(), a, workspace, false, os.Environ())
			if err != nil {
				return err
			}
			entries, err := rt.Manager.GC(cmd.Context(), yes)
			if err != nil {
				return runtimeFailure(errcode.GCFailed, err, "nothing was removed; check the Slurm commands with "+bootstrapCommand(workspace)+" and run gc again")
			}
			entries = orEmpty(entries)
			removed := 0
			for _, e := range entries {
				if e.Action == manager.GCRemoved {
					removed++
				}
			}
			data := map[string]any{"dry_run": !yes, "removed": removed, "kept": len(entries) - removed, "job_dirs": entries}
			return a.emit(cmd, data, func(w io.Writer) {
				if len(entries) == 0 {
					fmt.Fprintln(w, "no job dirs")
				}
				for _, e := range entries {
					action := e.Action
					if action == manager.GCWouldRemove {
						action = "would remove (run with --yes)"
					}
					fmt.Fprintf(w, "%s job %s slurm %s: %s (%s): %s\n", e.Dir, cmp.Or(e.JobID, "?"), cmp.Or(e.SlurmJobID, "-"), e.Verdict, e.Reason, action)
				}
			})
		},
	}
	bindWorkspace(a, cmd, &workspace, "prepared runtime workspace")
	cmd.Flags().BoolVar(&yes, "yes", false, "remove the job dirs confirmed finished (default: dry run)")
	bindJSON(cmd)
	return cmd
}
