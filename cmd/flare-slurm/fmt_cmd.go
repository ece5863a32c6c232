package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/schema"
)

// fmtFile is one entry of `fmt --json` output.
type fmtFile struct {
	Path    string           `json:"path"`
	Kind    string           `json:"kind"`
	Quoted  []schema.Quoting `json:"quoted"`
	Left    []schema.Quoting `json:"left"`
	Written bool             `json:"written"`
}

// newFmtCommand builds `flare-slurm fmt`.
func newFmtCommand(a *app) *cobra.Command {
	var fix, asJSON bool
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
			if len(slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p != "-" })) > 1 {
				return usageErrorf("'-' (standard input) can be given once")
			}
			var files []fmtFile
			var probs schema.Problems
			pending := 0
			for _, p := range paths {
				f, out, ps := fmtOne(a, p, kind, fix)
				probs = append(probs, ps...)
				if ps != nil {
					continue
				}
				files = append(files, f)
				if !fix {
					pending += len(f.Quoted)
				}
				if out != nil {
					if _, err := a.stdout.Write(out); err != nil {
						return err
					}
				}
			}
			if probs != nil {
				return failure(errcode.InvalidInput, fmt.Sprintf("%s cannot be formatted", plural(len(probs), "file")),
					"give slurm.yaml or study_runtime.yaml files (a kit's are KIT/config.yaml and KIT/local/study_runtime.yaml)", probs)
			}
			if asJSON {
				if err := a.printOK(map[string]any{"files": files}); err != nil {
					return err
				}
			} else {
				a.printFmt(files, fix)
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// fmtOne formats one PATH: its entry, the fixed text to print (standard
// input with --fix), or the problems that stop it.
func fmtOne(a *app, p, kind string, fix bool) (fmtFile, []byte, schema.Problems) {
	name := p
	var data []byte
	var probs schema.Problems
	var st fs.FileInfo
	if p == "-" {
		name = stdinName
		if data, probs = schema.ReadStdin(name, a.stdin); probs != nil {
			return fmtFile{}, nil, probs
		}
	} else {
		// Read once, bounded, without waiting on a pipe, and --fix never
		// through a symlink (it writes the file back); the kind is found in
		// what was read, not by reading the path again.
		if data, st, probs = schema.ReadInput(p, fix); probs != nil {
			if fix && probs[0].Message == "is a symlink, not a regular file" {
				probs[0].Message = "is a symlink: fmt --fix does not write through one"
			}
			return fmtFile{}, nil, probs
		}
	}
	k := kind
	if k == "" {
		var ps schema.Problems
		if p == "-" {
			k, ps = schema.DetectKindData(name, data)
		} else {
			k, ps = schema.DetectKindFile(p, data)
		}
		if ps != nil {
			return fmtFile{}, nil, ps
		}
		if k == "" {
			return fmtFile{}, nil, schema.Problems{{Kind: problem.Rule, File: name, Message: "cannot tell what kind of file this is",
				Hint: "pass --kind slurm-config or --kind study-runtime"}}
		}
	}
	if k != schema.KindSlurmConfig && k != schema.KindStudyRuntime {
		return fmtFile{}, nil, schema.Problems{{Kind: problem.Rule, File: name, Message: "is a " + k + ": fmt formats slurm-config and study-runtime files"}}
	}
	fixed, done, left := schema.QuoteReadings(k, data)
	f := fmtFile{Path: name, Kind: k, Quoted: done, Left: left}
	if f.Quoted == nil {
		f.Quoted = []schema.Quoting{}
	}
	if f.Left == nil {
		f.Left = []schema.Quoting{}
	}
	if !fix {
		return f, nil, nil
	}
	if p == "-" {
		return f, fixed, nil
	}
	if len(done) > 0 {
		if err := replaceKeepingOwner(p, fixed, st); err != nil {
			return fmtFile{}, nil, schema.Problems{{Kind: problem.Read, File: p, Message: "cannot write file: " + errText(err)}}
		}
		f.Written = true
	}
	return f, nil, nil
}

// replaceKeepingOwner replaces the file p, whose fstat was st, with data,
// atomically (a new file renamed over it: a symlink put at p meanwhile is
// replaced, never written through), with st's mode and, when this process
// may set it (root), st's owner: fmt --fix run as root must not hand a
// study admin's file to root.
func replaceKeepingOwner(p string, data []byte, st fs.FileInfo) error {
	t, err := renameio.TempFile("", p)
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	if err := t.Chmod(st.Mode().Perm()); err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := t.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
			return err
		}
	}
	return t.CloseAtomicallyReplace()
}

// printFmt reports what fmt found or did, one line per value.
func (a *app) printFmt(files []fmtFile, fix bool) {
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
		case len(f.Quoted) == 0 && len(f.Left) == 0 && f.Path != stdinName || len(f.Quoted) == 0 && f.Path == stdinName && !fix:
			fmt.Fprintf(a.stderr, "%s: ok (%s)\n", visible.Quote(f.Path), f.Kind)
		case fix && f.Written:
			fmt.Fprintf(a.stderr, "%s: %s quoted\n", visible.Quote(f.Path), plural(len(f.Quoted), "value"))
		}
	}
}

// errText is an OS error without the path it repeats.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return strings.TrimSpace(err.Error())
}
