// Package yaml11 is `flare-slurm fmt` as an action: it finds, in a
// slurm.yaml or study_runtime.yaml file, every plain value that NVFlare's
// YAML 1.1 reader reads differently from flare-slurm's YAML 1.2 reader and,
// with Fix, writes each one quoted (schema.QuoteReadings), changing nothing
// else. It returns what it found or did; cmd/flare-slurm writes the report.
package yaml11

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/google/renameio/v2"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Options are what fmt's flags select.
type Options struct {
	// Kind is the kind of every PATH ("" detects each one's): a Slurm
	// config or a study runtime.
	Kind string
	// Fix writes the quoted values into the file (standard input: into
	// Outcome.Fixed).
	Fix bool
	// Stdin is read for a PATH of "-", named StdinName.
	Stdin io.Reader
	// StdinName names standard input in problems and results.
	StdinName string
}

// File is one entry of `fmt --json` output.
type File struct {
	Path    string           `json:"path"`
	Kind    string           `json:"kind"`
	Quoted  []schema.Quoting `json:"quoted"`
	Left    []schema.Quoting `json:"left"`
	Written bool             `json:"written"`
}

// Outcome is what Format did with one PATH: its entry, the fixed text to
// print (standard input with Fix), or the problems that stopped it (and
// then nothing else).
type Outcome struct {
	File     File
	Fixed    []byte
	Problems schema.Problems
}

// Format formats one PATH ("-": standard input).
func Format(p string, opts Options) Outcome {
	k, fix, name := opts.Kind, opts.Fix, p
	var data []byte
	var probs schema.Problems
	var st fs.FileInfo
	if p == "-" {
		name = opts.StdinName
		if data, probs = schema.ReadStdin(name, opts.Stdin); probs != nil {
			return Outcome{Problems: probs}
		}
	} else {
		// Read once, bounded, without waiting on a pipe, and with Fix never
		// through a symlink (it writes the file back); the kind is found in
		// what was read, not by reading the path again.
		if data, st, probs = schema.ReadInput(p, fix); probs != nil {
			if fix && probs[0].Message == "is a symlink, not a regular file" {
				probs[0].Message = "is a symlink: fmt --fix does not write through one"
			}
			return Outcome{Problems: probs}
		}
	}
	if k == "" {
		k, probs = schema.DetectKindData(name, data, p != "-")
		if probs == nil && k == "" {
			probs = schema.Problems{{Kind: problem.Rule, File: name, Message: "cannot tell what kind of file this is",
				Hint: "pass --kind slurm-config or --kind study-runtime"}}
		}
		if probs != nil {
			return Outcome{Problems: probs}
		}
	}
	if k != schema.KindSlurmConfig && k != schema.KindStudyRuntime {
		return Outcome{Problems: schema.Problems{{Kind: problem.Rule, File: name, Message: "is a " + k + ": fmt formats slurm-config and study-runtime files"}}}
	}
	fixed, done, left := schema.QuoteReadings(k, data)
	// Never nil: --json shows none as [].
	f := File{Path: name, Kind: k, Quoted: append([]schema.Quoting{}, done...), Left: append([]schema.Quoting{}, left...)}
	if !fix {
		return Outcome{File: f}
	}
	if p == "-" {
		return Outcome{File: f, Fixed: fixed}
	}
	if len(done) > 0 {
		if err := replaceKeepingOwner(p, fixed, st); err != nil {
			return Outcome{Problems: schema.Problems{{Kind: problem.Read, File: p, Message: "cannot write file: " + fsx.Pathless(err).Error()}}}
		}
		f.Written = true
	}
	return Outcome{File: f}
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
