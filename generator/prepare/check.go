package prepare

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/flare-slurm/flare-slurm/schema"
)

// ChangeKind says how one path of the workspace would change.
type ChangeKind string

// The kinds of change Diff reports.
const (
	Added    ChangeKind = "added"
	Removed  ChangeKind = "removed"
	Modified ChangeKind = "modified"
	ModeOnly ChangeKind = "mode"
	TypeDiff ChangeKind = "type"
)

// Change is one difference between the workspace on disk and the rendered
// one.
type Change struct {
	Path   string // slash path relative to the workspace
	Kind   ChangeKind
	Detail string
}

// Drift is the result of Diff: every change, and a unified diff for people.
type Drift struct {
	Output  string
	Changes []Change
	Text    string
}

// Problems returns the changes as problems naming the workspace file, for
// the --json error envelope.
func (d *Drift) Problems() schema.Problems {
	ps := make(schema.Problems, 0, len(d.Changes))
	for _, c := range d.Changes {
		ps = append(ps, schema.Problem{File: filepath.Join(d.Output, filepath.FromSlash(c.Path)), Message: c.Detail})
	}
	return ps
}

// diffLimit is the largest file Diff shows line by line.
const diffLimit = 1 << 20

// Diff compares the workspace on disk at w.Output with w, reading both and
// writing nothing. File content, file type and permission bits count;
// modification times do not.
func Diff(w *Workspace) (*Drift, error) {
	d := &Drift{Output: w.Output}
	var text strings.Builder
	onDisk, err := listTree(w.Output)
	if err != nil {
		return nil, &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot read the workspace %s: %v", w.Output, err), Hint: "check its permissions", Err: err}
	}
	add := func(p string, kind ChangeKind, format string, args ...any) {
		d.Changes = append(d.Changes, Change{Path: p, Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	for _, f := range w.Files {
		disk, exists := onDisk[f.Path]
		delete(onDisk, f.Path)
		display := path.Join(path.Base(w.Output), f.Path)
		switch {
		case !exists && f.Dir:
			add(f.Path, Added, "directory would be added")
			fmt.Fprintf(&text, "Only in prepared: %s/\n", display)
			continue
		case !exists:
			data, err := w.content(f)
			if err != nil {
				return nil, err
			}
			add(f.Path, Added, "file would be added")
			writeDiff(&text, display, nil, data, false, true)
			continue
		case f.Dir != disk.IsDir() || (!f.Dir && !disk.Mode().IsRegular()):
			add(f.Path, TypeDiff, "a %s would replace the %s", kindName(f.Dir), schema.FileKind(disk.Mode()))
			fmt.Fprintf(&text, "File type differs: %s (%s on disk)\n", display, schema.FileKind(disk.Mode()))
			continue
		}
		if !f.Dir {
			want, err := w.content(f)
			if err != nil {
				return nil, err
			}
			have, err := os.ReadFile(filepath.Join(w.Output, filepath.FromSlash(f.Path)))
			if err != nil {
				return nil, &Error{Code: CodeFailed, Message: fmt.Sprintf("cannot read %s: %v", display, err), Hint: "check its permissions", Err: err}
			}
			if !bytes.Equal(have, want) {
				add(f.Path, Modified, "content would change")
				writeDiff(&text, display, have, want, true, true)
			}
		}
		if have := disk.Mode().Perm(); have != f.Mode {
			add(f.Path, ModeOnly, "mode would change from %04o to %04o", have, f.Mode)
			fmt.Fprintf(&text, "Mode differs: %s %04o -> %04o\n", display, have, f.Mode)
		}
	}
	// What is left on disk would be removed; report each top-most path.
	rest := make([]string, 0, len(onDisk))
	for p := range onDisk {
		rest = append(rest, p)
	}
	sort.Slice(rest, func(i, j int) bool { return pathLess(rest[i], rest[j]) })
	var removedDir string
	for _, p := range rest {
		if removedDir != "" && strings.HasPrefix(p, removedDir+"/") {
			continue
		}
		display := path.Join(path.Base(w.Output), p)
		if onDisk[p].IsDir() {
			removedDir = p
			add(p, Removed, "directory would be removed with its content")
			fmt.Fprintf(&text, "Only in %s: %s/\n", filepath.Join(w.Output, filepath.FromSlash(path.Dir(p))), path.Base(p))
			continue
		}
		add(p, Removed, "file would be removed")
		var have []byte
		if onDisk[p].Mode().IsRegular() && onDisk[p].Size() <= diffLimit {
			have, _ = os.ReadFile(filepath.Join(w.Output, filepath.FromSlash(p)))
		}
		writeDiff(&text, display, have, nil, true, false)
	}
	d.Text = text.String()
	return d, nil
}

func kindName(dir bool) string {
	if dir {
		return "directory"
	}
	return "file"
}

// content returns what f will hold.
func (w *Workspace) content(f *File) ([]byte, error) {
	if f.rendered {
		return f.Data, nil
	}
	data, err := os.ReadFile(f.Source)
	if err != nil {
		return nil, &Error{Code: CodeInvalidKit, Message: fmt.Sprintf("cannot read %s: %v", f.Source, err), Hint: "check the permissions of the kit", Err: err}
	}
	return data, nil
}

// listTree maps every path under root (not following symlinks) to its
// file info; a missing root is an empty tree.
func listTree(root string) (map[string]fs.FileInfo, error) {
	out := map[string]fs.FileInfo{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = info
		return nil
	})
	return out, err
}

func isText(b []byte) bool {
	return len(b) <= diffLimit && utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// writeDiff writes a unified diff of one file; a side that does not exist
// is shown as /dev/null.
func writeDiff(out *strings.Builder, name string, a, b []byte, aExists, bExists bool) {
	from, to := "a/"+name, "b/"+name
	if !aExists {
		from = "/dev/null"
	}
	if !bExists {
		to = "/dev/null"
	}
	if !isText(a) || !isText(b) {
		fmt.Fprintf(out, "Binary files %s and %s differ\n", from, to)
		return
	}
	text, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b), FromFile: from, ToFile: to, Context: 3,
	})
	out.WriteString(text)
}

// lines splits b into newline-terminated lines; a last line without a
// newline is marked the way diff(1) marks it.
func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	ls := strings.SplitAfter(string(b), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	} else {
		ls[len(ls)-1] += "\n\\ No newline at end of file\n"
	}
	return ls
}
