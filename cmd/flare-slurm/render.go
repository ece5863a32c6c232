package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"
)

// renderResult is what render reports (the data of its --json output).
type renderResult struct {
	JobID      string   `json:"job_id"`
	JobName    string   `json:"job_name"`
	JobDir     string   `json:"job_dir"`
	Sandbox    string   `json:"sandbox"`
	Output     string   `json:"output"`
	Files      []string `json:"files"`
	SecretEnv  string   `json:"secret_env"` // "redacted" or "revealed"
	SbatchArgv []string `json:"sbatch_argv"`
	Notes      []string `json:"notes"`
}

// printNotes prints each note as one "flare-slurm: note: …" line on
// stderr (also with --json, whose stdout stays one envelope).
func (a *app) printNotes(notes []string) {
	for _, n := range notes {
		fmt.Fprintf(a.stderr, "flare-slurm: note: %s\n", n)
	}
}

func newRenderCommand(a *app) *cobra.Command {
	var workspace, request, output string
	var reveal, force bool
	cmd := &cobra.Command{
		Use:   "render --workspace W --request FILE|- --output DIR",
		Short: "Compile one launch request into reviewable files; submit nothing",
		Long: "render compiles one launch request against a prepared workspace exactly as a launch would\n" +
			"and writes batch.sh, node.sh (node groups only), secret.env (values redacted unless\n" +
			"--reveal-secrets), sbatch.argv.json and plan.json into DIR. It submits nothing and writes\n" +
			"nothing into the workspace. Existing review files are an error; --force replaces them.\n" +
			"Secret values are read from this process's environment (study secret_env sources) and\n" +
			"from the request (credentials); read the request from - to keep credentials off disk.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := compile.ReadRequest(request, a.stdin)
			if err != nil {
				return failure(errcode.InvalidRequest, fmt.Sprintf("cannot read the launch request %s: %v", request, err), "pass a JSON file, or - for standard input", nil)
			}
			ws, err := schema.LoadWorkspace(workspace)
			if err != nil {
				return compileFailure(errcode.InvalidWorkspace, "the workspace "+workspace+" cannot be used", "prepare it with 'flare-slurm prepare' and pass its --output", err)
			}
			if err := compile.CheckReviewOutput(ws, output); err != nil {
				return failure(errcode.InvalidOutput, err.Error(), "choose an --output directory outside the workspace", nil)
			}
			env := compile.Environ(os.LookupEnv)
			plan, req, err := compile.ParseAndResolveReview(ws, request, data, env)
			if err != nil {
				if req == nil || req.Invalid {
					return compileFailure(errcode.InvalidRequest, "the launch request "+request+" is invalid", "fix every problem listed (contract §12 describes the request); nothing was written", err)
				}
				return compileFailure(errcode.LaunchRefused, "job "+req.JobID+" cannot be launched as requested", "fix the fields named above; nothing was written", err)
			}
			compileFn, secretEnv := plan.CompileRedacted, "redacted"
			if reveal {
				compileFn, secretEnv = plan.Compile, "revealed"
			}
			art, err := compileFn(env)
			if err != nil {
				return compileFailure(errcode.LaunchRefused, "job "+req.JobID+" cannot be compiled", "fix the fields named above; nothing was written", err)
			}
			files, err := plan.ReviewFiles(art)
			if err != nil {
				return failure(errcode.Internal, err.Error(), "", nil)
			}
			if err := compile.WriteReview(output, files, force); err != nil {
				return failure(errcode.WriteFailed, err.Error(), "choose a new or empty --output directory, or add --force to replace the review files", nil)
			}
			res := renderResult{JobID: req.JobID, JobName: art.JobName, JobDir: art.JobDir, Sandbox: plan.Sandbox(),
				Output: output, SecretEnv: secretEnv, SbatchArgv: art.Argv, Notes: orEmpty(plan.Notes())}
			a.printNotes(res.Notes)
			for _, f := range files {
				res.Files = append(res.Files, filepath.Join(output, f.Name))
			}
			return a.emit(cmd, res, func(w io.Writer) {
				fmt.Fprintf(w, "rendered job %s (sandbox %s, Slurm job name %s) into %s:\n", res.JobID, res.Sandbox, res.JobName, output)
				for _, f := range res.Files {
					fmt.Fprintf(w, "  %s\n", f)
				}
				fmt.Fprintf(w, "secret.env values are %s; nothing was submitted\n", res.SecretEnv)
			})
		},
	}
	f := cmd.Flags()
	bindWorkspace(a, cmd, &workspace, "prepared workspace (the --output of prepare)")
	f.StringVar(&request, "request", "", "launch request JSON file, or - for standard input")
	f.StringVar(&output, "output", "", "directory to write the review files into (created if missing)")
	bindJSON(cmd)
	f.BoolVar(&reveal, "reveal-secrets", false, "write real secret values into secret.env")
	f.BoolVar(&force, "force", false, "replace review files that exist in --output (other files there are left alone)")
	for _, name := range []string{"workspace", "request", "output"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// compileFailure turns a compile error into a CLI failure, listing its
// problems when it carries them.
func compileFailure(code, message, hint string, err error) error {
	var ps schema.Problems
	if errors.As(err, &ps) {
		return failure(code, message, hint, ps)
	}
	return failure(code, message+": "+err.Error(), hint, nil)
}
