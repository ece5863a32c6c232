package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/schema"
	"github.com/flare-slurm/flare-slurm/schema/validate"
	"github.com/flare-slurm/flare-slurm/schema/yaml11"
)

func newFmtCommand(a *app) *cobra.Command {
	var fix bool
	var kind string
	cmd := &cobra.Command{
		Use:   "fmt [--fix] [--kind slurm-config|study-runtime] PATH...",
		Short: "Quote the values NVFlare's YAML 1.1 reader reads differently",
		Long: `fmt finds, in slurm.yaml and study_runtime.yaml files, every plain value that NVFlare's
YAML 1.1 reader (PyYAML) reads differently from flare-slurm's YAML 1.2 reader (the
yaml11-reading warnings of validate: an unquoted time: 12:00:00 is 43200 seconds to
NVFlare, yes and on are booleans there). Without --fix it lists them and exits 1 when
there are any (a check for CI); with --fix it writes each one quoted, as written
("12:00:00"), which both read as that text, and changes nothing else: comments, order and
indentation stay byte for byte. Where you meant the number flare-slurm read (an env value
0o17 is 15 here), write the number instead. A PATH of - reads standard input and, with
--fix, writes the result to standard output. fmt does not write through a symlink.`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			if len(paths) == 0 {
				return usageErrorf("fmt needs at least one PATH")
			}
			if kind != "" && kind != schema.KindSlurmConfig && kind != schema.KindStudyRuntime {
				return usageErrorf("--kind %q: fmt takes %s or %s", kind, schema.KindSlurmConfig, schema.KindStudyRuntime)
			}
			if i := slices.Index(paths, "-"); i >= 0 && slices.Contains(paths[i+1:], "-") {
				return usageErrorf("'-' (standard input) can be given once")
			}
			var files []yaml11.File
			var probs schema.Problems
			pending := 0
			opts := yaml11.Options{Kind: kind, Fix: fix, Stdin: a.stdin, StdinName: validate.StdinName}
			for _, p := range paths {
				o := yaml11.Format(p, opts)
				probs = append(probs, o.Problems...)
				if o.Problems != nil {
					continue
				}
				files = append(files, o.File)
				if !fix {
					pending += len(o.File.Quoted)
				}
				if o.Fixed != nil {
					if _, err := a.stdout.Write(o.Fixed); err != nil {
						return err
					}
				}
			}
			if probs != nil {
				return failure(errcode.InvalidInput, fmt.Sprintf("%s cannot be formatted", plural(len(probs), "file")),
					"give slurm.yaml or study_runtime.yaml files (a kit's are KIT/config.yaml and KIT/local/study_runtime.yaml)", probs)
			}
			if err := a.emit(cmd, map[string]any{"files": files}, func(io.Writer) { a.printFmt(files, fix) }); err != nil {
				return err
			}
			if pending > 0 {
				return failure(errcode.NeedsFormat, fmt.Sprintf("%s to quote", plural(pending, "value")),
					"run 'flare-slurm fmt --fix' on the files listed", nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&fix, "fix", false, "write the quoted values into each file (standard input: to standard output)")
	cmd.Flags().StringVar(&kind, "kind", "", "kind of every PATH: slurm-config or study-runtime (default: detected)")
	bindJSON(cmd)
	return cmd
}

// printFmt reports what fmt found or did, one line per value.
func (a *app) printFmt(files []yaml11.File, fix bool) {
	for _, f := range files {
		verb := "would quote"
		if fix {
			verb = "quoted"
		}
		for _, q := range f.Quoted {
			fmt.Fprintf(a.stderr, "%s:%d:%d: %s: %s %s as %s\n", visible.Quote(f.Path), q.Line, q.Column, q.Path, verb, visible.Quote(q.From), q.To)
		}
		for _, q := range f.Left {
			fmt.Fprintf(a.stderr, "%s:%d:%d: %s: %s spans lines: quote it by hand as %s\n", visible.Quote(f.Path), q.Line, q.Column, q.Path, visible.Quote(q.From), q.To)
		}
		switch {
		case len(f.Quoted) == 0 && len(f.Left) == 0 && f.Path != validate.StdinName || len(f.Quoted) == 0 && f.Path == validate.StdinName && !fix:
			fmt.Fprintf(a.stderr, "%s: ok (%s)\n", visible.Quote(f.Path), f.Kind)
		case fix && f.Written:
			fmt.Fprintf(a.stderr, "%s: %s quoted\n", visible.Quote(f.Path), plural(len(f.Quoted), "value"))
		}
	}
}
