package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/joblog"
)

// logsFollowInterval is how often logs --follow looks for new output; the
// job's state comes from the workspace's shared observation, refreshed at
// most once per poll interval whoever asks.
const logsFollowInterval = time.Second

func newLogsCommand(a *app) *cobra.Command {
	var t jobTarget
	var follow bool
	cmd := t.bind(a, &cobra.Command{
		Use:   "logs --workspace W --job-id ID [--follow]",
		Short: "Print a job's Slurm output (its worker's stdout and stderr)",
		Long: "logs prints the Slurm output of the job's latest run, W/<job id>/slurm-<Slurm job id>.out,\n" +
			"found through the workspace's records (the job's handle, or its recorded result). --follow\n" +
			"keeps printing what the job appends, waits for the file while the job is pending, and\n" +
			"stops once the job has ended and its output is drained (Ctrl-C stops it earlier). The\n" +
			"file is opened without following a symlink and must be a regular file of this account.\n" +
			"With --json (not with --follow) the output is the envelope's data.content.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if follow && t.asJSON {
				return usageErrorf("--follow prints the output as it grows: it cannot be one JSON document (drop --json)")
			}
			h, err := t.open(cmd, a)
			if err != nil {
				return err
			}
			root := h.Workspace()
			info := h.Info()
			path := joblog.Path(root, info.JobID, info.SlurmJobID)
			open := func() (*os.File, error) { return joblog.Open(root, info.JobID, info.SlurmJobID, os.Getuid()) }
			if follow {
				ended := func(ctx context.Context) bool {
					st, err := h.Poll(ctx)
					return err == nil && st.Terminal
				}
				if err := joblog.Follow(cmd.Context(), a.stdout, open, ended, logsFollowInterval); err != nil {
					return failure(errcode.LogsFailed, fmt.Sprintf("job %s: %v", info.JobID, err), "", nil)
				}
				if st, err := h.Poll(cmd.Context()); err == nil && st.Terminal {
					fmt.Fprintf(a.stderr, "flare-slurm: job %s (Slurm job %s) ended %s, return code %d\n", st.JobID, st.SlurmJobID, st.State, st.ReturnCode)
				}
				return nil
			}
			f, err := open()
			if errors.Is(err, joblog.ErrNotYet) {
				st, _ := h.Poll(cmd.Context())
				return failure(errcode.LogsFailed, fmt.Sprintf("job %s (Slurm job %s, %s) has no output at %s", info.JobID, info.SlurmJobID, st.State, path),
					"Slurm writes it when the job starts; follow it with 'flare-slurm logs --workspace "+shell.Quote(t.workspace)+" --job-id "+shell.Quote(info.JobID)+" --follow'", nil)
			}
			if err != nil {
				return failure(errcode.LogsFailed, fmt.Sprintf("job %s: %v", info.JobID, err), "", nil)
			}
			defer f.Close()
			if t.asJSON {
				data, err := io.ReadAll(io.LimitReader(f, maxLogsJSON+1))
				if err != nil {
					return failure(errcode.LogsFailed, fmt.Sprintf("job %s: read %s: %v", info.JobID, path, err), "", nil)
				}
				if len(data) > maxLogsJSON {
					return failure(errcode.LogsFailed, fmt.Sprintf("job %s: %s is larger than %d bytes: too large for one JSON document", info.JobID, path, maxLogsJSON),
						"read it without --json", nil)
				}
				return a.printOK(map[string]any{"job_id": info.JobID, "slurm_job_id": info.SlurmJobID, "path": path, "content": string(data)})
			}
			if _, err := io.Copy(a.stdout, f); err != nil {
				return failure(errcode.LogsFailed, fmt.Sprintf("job %s: read %s: %v", info.JobID, path, err), "", nil)
			}
			return nil
		},
	})
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what the job appends until it ends")
	return cmd
}

// maxLogsJSON bounds logs --json: the content is held in memory once.
const maxLogsJSON = 16 << 20
