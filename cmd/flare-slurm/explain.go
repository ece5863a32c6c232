package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/schema"
)

func newExplainCommand(a *app) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "explain [--schema NAME] [KEY]",
		Short: "Print what a schema says about one key (type, default, description, fields)",
		Long: `explain prints, from the embedded JSON Schemas, what one key of slurm.yaml,
study_runtime.yaml, a job's meta.json or a launch request means: its type, allowed values,
default, unit, whether it is required, its description and, for a mapping, its fields (as
kubectl explain does). KEY is a dotted path: job_launcher.sandbox, studies.NAME.container,
launcher_spec.SITE.slurm.mem_per_node; any name stands for a study, variable or site name,
[] for a list's items. Without --schema (or a schema name as KEY's first part) the
schemas are searched in this order: slurm-config, study-runtime, job-meta, launch-request.
No KEY explains a file's top level.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name != "" && !slices.Contains(schema.Names(), name) {
				return usageErrorf("--schema %q is not a schema (one of %s)%s", name, strings.Join(schema.Names(), ", "), suggestion(name, schema.Names()))
			}
			x, err := schema.Explain(name, cmp.Or(args...)) // KEY, or "" for none
			var nk *schema.ErrNoKey
			if errors.As(err, &nk) {
				hint := "the keys there: " + strings.Join(nk.Allowed, ", ")
				if nk.Suggestion != "" {
					hint = nk.Suggestion + " The keys there: " + strings.Join(nk.Allowed, ", ")
				}
				return failure(errcode.NoSuchKey, nk.Error(), hint, nil)
			}
			if err != nil {
				return failure(errcode.Internal, err.Error(), "", nil)
			}
			return a.emit(cmd, x, func(w io.Writer) { printExplanation(w, x) })
		},
	}
	cmd.Flags().StringVar(&name, "schema", "", "the schema to look in: "+strings.Join(schema.Names(), ", ")+" (default: searched)")
	bindJSON(cmd)
	return cmd
}

// printExplanation prints x as kubectl explain does: headed lines, the
// description wrapped, then the fields.
func printExplanation(w io.Writer, x *schema.Explanation) {
	fmt.Fprintf(w, "SCHEMA:   %s\nKEY:      %s\nTYPE:     %s\n", x.Schema, cmp.Or(x.Path, "(the whole file)"), x.Type)
	required := ""
	if x.Required {
		required = "yes"
	}
	for _, h := range [][2]string{{"ALLOWED:", strings.Join(x.Enum, ", ")}, {"DEFAULT:", x.Default}, {"UNIT:", x.Unit}, {"REQUIRED:", required}} {
		if h[1] != "" {
			fmt.Fprintf(w, "%-9s %s\n", h[0], h[1])
		}
	}
	if x.Description != "" {
		fmt.Fprintf(w, "\nDESCRIPTION:\n%s\n", schema.Wrap("   ", x.Description, 92))
	}
	if len(x.Fields) > 0 {
		fmt.Fprintln(w, "\nFIELDS:")
		width := 0
		for _, f := range x.Fields {
			width = max(width, len(f.Name))
		}
		for _, f := range x.Fields {
			req := ""
			if f.Required {
				req = " (required)"
			}
			fmt.Fprintf(w, "    %-*s  <%s>%s\n", width, f.Name, f.Type, req)
			if f.Summary != "" {
				fmt.Fprintf(w, "%s\n", schema.Wrap("       ", f.Summary, 92))
			}
		}
	}
}
