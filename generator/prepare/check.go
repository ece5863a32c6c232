package prepare

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/visible"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// ChangeKind says how one path of the workspace would change.
type ChangeKind string

// The kinds of change Diff reports.
const (
	Added    ChangeKind = "added"
	Removed  ChangeKind = "removed"
	Modified ChangeKind = "modified"
	modeOnly ChangeKind = "mode"
	typeDiff ChangeKind = "type"
	// Kept: a file (or empty directory) of the workspace's local/ that a
	// person wrote, which prepare keeps (local.go). It is drift unless
	// accepted: local/study_runtime.yaml, an empty directory, or a path
	// named with Options.KeepLocal.
	Kept ChangeKind = "kept"
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
	Output string
	// Changes are the differences that make the check fail (drift),
	// kept files that are not accepted among them.
	Changes []Change
	// Kept are the kept files a check accepts (local/study_runtime.yaml,
	// empty directories, paths named with Options.KeepLocal): reported,
	// but no drift, and not in Text.
	Kept []Change
	Text string
	// Excluded are the secret files a check with Options.ExcludeSecrets
	// left out (never compared, never shown), sorted by path.
	Excluded []ExcludedSecret
	// Warnings are "text [code]" lines, as Result.Warnings: a copy that
	// holds secret files although the check excludes them.
	Warnings []string
	names    givenPaths // the Workspace's: problems name files as given
}

// ExcludedSecret is one secret file a drift check did not compare.
type ExcludedSecret struct {
	Path string `json:"path"` // slash path relative to the workspace
	// InCopy says that the compared workspace (the copy given to
	// --against, or the workspace itself) holds the file: a copy
	// published for CI should not.
	InCopy bool `json:"in_copy"`
}

// file names the workspace file at slash path p as given.
func (d *Drift) file(p string) string {
	return d.names.name(filepath.Join(d.Output, filepath.FromSlash(p)))
}

// Problems returns the changes as problems naming the workspace file (as
// given), for the --json error envelope.
func (d *Drift) Problems() schema.Problems { return d.problems(d.Changes, "") }

// KeptProblems returns the accepted kept files (Kept) as warnings naming
// the workspace file (as given).
func (d *Drift) KeptProblems() schema.Problems {
	return d.problems(d.Kept, schema.WarnPrepareLocalKept)
}

func (d *Drift) problems(cs []Change, code string) schema.Problems {
	ps := make(schema.Problems, 0, len(cs))
	for _, c := range cs {
		ps = append(ps, schema.Problem{Kind: problem.Drift, File: d.file(c.Path), Message: c.Detail, Code: code})
	}
	return ps
}

// ExcludedProblems are the secret files the check left out (Excluded) as
// "skipped" problems under dir, the directory compared as the user named
// it: names only, never content or a digest; an empty list when none.
func (d *Drift) ExcludedProblems(dir string) schema.Problems {
	ps := schema.Problems{}
	for _, e := range d.Excluded {
		ps = append(ps, schema.Problem{Kind: problem.Drift, File: filepath.Join(dir, filepath.FromSlash(e.Path)),
			Message: "secret file not compared (--exclude-secrets)"})
	}
	return ps
}

// diffLimit is the largest file Diff shows line by line (and reads into
// memory); larger files are compared by streaming and only said to differ.
const diffLimit = 1 << 20

// Diff compares the workspace on disk at w.Output with w, reading both and
// writing nothing. File content, file type and permission bits count;
// modification times do not. Files are compared by streaming: only files
// of at most diffLimit bytes are read whole (to show a unified diff), so
// memory stays flat whatever the size of the kit's files. The content of a
// secret file (see secretFile) is never shown: its change is reported with
// the SHA-256 of both sides.
//
// What a person wrote in the workspace's local/ is compared as prepare
// would carry it over (local.go): each kept file is a Kept change, not
// compared with itself; what prepare would refuse to keep fails Diff as
// it fails prepare.
func Diff(w *Workspace) (*Drift, error) { return diff(w, w.Output) }

// DiffAgainst is Diff comparing w, rendered for the deployed path
// w.Output, with the directory dir: a copy of the deployed workspace
// (restored with its permission bits, as tar and rsync -a do) anywhere, for
// a drift check on a CI runner. dir must exist. Drift.Output is dir.
func DiffAgainst(w *Workspace, dir string) (*Drift, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("the workspace copy %s to compare with does not exist", dir),
			Hint: "give --against the directory holding a copy of the deployed workspace", Err: err}
	case err != nil:
		return nil, &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot read the workspace copy %s: %v", dir, err), Hint: "check its permissions", Err: err}
	case !st.IsDir():
		return nil, &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("the workspace copy %s is not a directory", dir),
			Hint: "give --against the directory holding a copy of the deployed workspace"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot resolve the workspace copy %s: %v", dir, err), Hint: "give an absolute path", Err: err}
	}
	w.names.add(dir, abs)
	return diff(w, abs)
}

// diff compares w with dir, the workspace or a copy of it. What a person
// wrote in dir's local/ is what prepare would keep (on the deployed host,
// for a copy): reported as kept, not as removed.
func diff(w *Workspace, dir string) (*Drift, error) {
	if err := w.carryLocal(dir); err != nil {
		return nil, err
	}
	d := &Drift{Output: dir, names: w.names}
	var text strings.Builder
	disk, err := openTree(dir, w.names)
	if err != nil {
		return nil, &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot read the workspace %s: %v", w.name(dir), err), Hint: "check its permissions", Err: err}
	}
	defer disk.root.Close()
	// add records the change of p, and its text for people.
	add := func(p string, kind ChangeKind, detail, line string) {
		d.Changes = append(d.Changes, Change{Path: p, Kind: kind, Detail: detail})
		text.WriteString(line)
	}
	base := path.Base(filepath.ToSlash(dir))
	for _, p := range w.absentSecrets {
		_, exists := disk.entries[p]
		delete(disk.entries, p)
		d.Excluded = append(d.Excluded, ExcludedSecret{Path: p, InCopy: exists})
	}
	if w.localNote != "" {
		d.Warnings = append(d.Warnings, w.localNote)
	}
	keptReason := map[string]string{} // why each entry carried over from dir's local/ is a person's
	for _, c := range w.carried {
		keptReason[c.path] = c.reason
	}
	// prepare's record of what it wrote into local/ is bookkeeping that
	// follows from the files compared (each change there is reported as
	// itself), and it holds a digest of every local/ file, secret ones
	// too: never compared, never shown.
	delete(disk.entries, staging.LocalManifestPath)
	for _, f := range w.Files {
		if f.Path == staging.LocalManifestPath {
			continue
		}
		have, exists := disk.entries[f.Path]
		delete(disk.entries, f.Path)
		display := visible.Quote(path.Join(base, f.Path))
		if reason := keptReason[f.Path]; reason != "" {
			// Kept from this very tree: never compared with itself, and
			// nothing of its content is read or shown.
			if why := w.keptAccepted(f); why != "" {
				d.Kept = append(d.Kept, Change{Path: f.Path, Kind: Kept, Detail: fmt.Sprintf("kept: %s (a re-prepare keeps it; not drift: %s)", reason, why)})
				continue
			}
			slash := ""
			if f.Dir {
				slash = "/"
			}
			add(f.Path, Kept, fmt.Sprintf("kept: %s (a re-prepare keeps it; drift: if it belongs there, name it with --keep-local %s)", reason, f.Path),
				fmt.Sprintf("Kept: %s%s (%s; a re-prepare keeps it)\n", display, slash, reason))
			continue
		}
		if w.opts.ExcludeSecrets && !f.Dir {
			excluded, err := w.excluded(f, disk, have, exists)
			if err != nil {
				return nil, err
			}
			if excluded {
				d.Excluded = append(d.Excluded, ExcludedSecret{Path: f.Path, InCopy: exists})
				continue
			}
		}
		switch {
		case !exists && f.Dir:
			add(f.Path, Added, "directory would be added", fmt.Sprintf("Only in prepared: %s/\n", display))
		case !exists:
			want, err := w.sample(f)
			if err != nil {
				return nil, err
			}
			if want.secret {
				add(f.Path, Added, fmt.Sprintf("secret file would be added (sha256 %s)", want.short()),
					fmt.Sprintf("Secret file only in prepared: %s (sha256 %s; content not shown)\n", display, want.short()))
				continue
			}
			add(f.Path, Added, "file would be added", "")
			writeDiff(&text, display, sample{}, want, false, true)
		case f.Dir != have.mode.IsDir() || (!f.Dir && !have.mode.IsRegular()):
			want := "file"
			if f.Dir {
				want = "directory"
			}
			add(f.Path, typeDiff, fmt.Sprintf("a %s would replace the %s", want, schema.FileKind(have.mode)),
				fmt.Sprintf("File type differs: %s (%s on disk)\n", display, schema.FileKind(have.mode)))
		default:
			if !f.Dir {
				if err := w.diffFile(f, disk, have, display, &text, add); err != nil {
					return nil, err
				}
			}
			if perm := have.mode.Perm(); perm != f.Mode {
				add(f.Path, modeOnly, fmt.Sprintf("mode would change from %04o to %04o", perm, f.Mode), fmt.Sprintf("Mode differs: %s %04o -> %04o\n", display, perm, f.Mode))
			}
		}
	}
	// What is left on disk would be removed; report each top-most path.
	rest := slices.Collect(maps.Keys(disk.entries))
	slices.SortFunc(rest, staging.ComparePaths)
	var removedDir string
	for _, p := range rest {
		if removedDir != "" && strings.HasPrefix(p, removedDir+"/") {
			continue
		}
		e := disk.entries[p]
		in, name := visible.Quote(filepath.Join(dir, filepath.FromSlash(path.Dir(p)))), visible.Quote(path.Base(p))
		if e.mode.IsDir() {
			removedDir = p
			add(p, Removed, "directory would be removed with its content", fmt.Sprintf("Only in %s: %s/\n", in, name))
			continue
		}
		if !e.mode.IsRegular() {
			add(p, Removed, schema.FileKind(e.mode)+" would be removed", fmt.Sprintf("Only in %s: %s (%s)\n", in, name, schema.FileKind(e.mode)))
			continue
		}
		old, err := disk.sample(p, e)
		if err != nil {
			return nil, err
		}
		if old.secret && w.opts.ExcludeSecrets {
			d.Excluded = append(d.Excluded, ExcludedSecret{Path: p, InCopy: true})
			continue
		}
		if old.secret {
			add(p, Removed, "secret file would be removed (sha256 "+old.short()+")",
				fmt.Sprintf("Secret file only in %s: %s (sha256 %s; content not shown)\n", in, name, old.short()))
			continue
		}
		add(p, Removed, "file would be removed", "")
		writeDiff(&text, visible.Quote(path.Join(base, p)), old, sample{}, true, false)
	}
	d.Text = text.String()
	slices.SortFunc(d.Excluded, func(a, b ExcludedSecret) int { return staging.ComparePaths(a.Path, b.Path) })
	var in []string // the excluded secret files the compared directory holds
	for _, e := range d.Excluded {
		if e.InCopy {
			in = append(in, d.file(e.Path))
		}
	}
	if len(in) > 0 && !slices.Contains(w.opts.IgnoreWarnings, schema.WarnPrepareSecretCopy) {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s holds %d secret file(s) (%s): not read into the report, but a copy published for a drift check "+
			"should hold none; publish the workspace without them (docs/prepare.md) [%s]",
			w.name(dir), len(in), strings.Join(in, ", "), schema.WarnPrepareSecretCopy))
	}
	return d, nil
}

// keptAccepted says why the kept entry f is no drift, or "" when it is:
// local/study_runtime.yaml is where the study admin writes
// (examples/study_runtime.yaml says so), an empty directory holds nothing
// NVFlare could read, and Options.KeepLocal names what a site accepts.
// Everything else a person wrote in local/ is drift: NVFlare loads code
// from local/custom/ and reads configuration from many local/ files
// (resources, authorization, privacy, logging, in several formats).
func (w *Workspace) keptAccepted(f *File) string {
	switch {
	case f.Dir:
		return "an empty directory"
	case f.Path == studyRuntime:
		return "the study admin's file"
	}
	for _, p := range w.opts.KeepLocal {
		p = strings.TrimSuffix(p, "/")
		if f.Path == p || strings.HasPrefix(f.Path, p+"/") {
			return "named with --keep-local " + p
		}
	}
	return ""
}

// excluded says whether a check that excludes secrets leaves the rendered
// file f out: it is secret by its path, or by its content on either side
// (a private key in a file whose name looks public). Only the
// classification is kept of what is read.
func (w *Workspace) excluded(f *File, disk *diskTree, have diskEntry, exists bool) (bool, error) {
	if secretFile(f.Path) {
		return true, nil
	}
	want, err := w.sample(f)
	if err != nil {
		return false, err
	}
	if want.secret {
		return true, nil
	}
	if exists && have.mode.IsRegular() {
		old, err := disk.sample(f.Path, have)
		if err != nil {
			return false, err
		}
		return old.secret, nil
	}
	return false, nil
}

// diffFile compares the regular file f with its copy on disk (have).
func (w *Workspace) diffFile(f *File, disk *diskTree, have diskEntry, display string, text *strings.Builder, add func(p string, kind ChangeKind, detail, line string)) error {
	want, err := w.sample(f)
	if err != nil {
		return err
	}
	old, err := disk.sample(f.Path, have)
	if err != nil {
		return err
	}
	if old.secret || want.secret {
		// Both sides hashed in full: equal hashes mean equal content.
		if old.sum == nil {
			old.sum, err = sumOf(disk.open(f.Path, have))
		}
		if err == nil && want.sum == nil {
			want.sum, err = w.hash(f)
		}
		if err != nil {
			return disk.readError(f.Path, err) // an *Error (of open, or w.hash) as it is
		}
		if !bytes.Equal(old.sum, want.sum) {
			add(f.Path, Modified, fmt.Sprintf("secret content would change (sha256 %s -> %s)", old.short(), want.short()),
				fmt.Sprintf("Secret file differs: %s changed (sha256 %s -> %s; content not shown)\n", display, old.short(), want.short()))
		}
		return nil
	}
	if old.data != nil && want.data != nil {
		if !bytes.Equal(old.data, want.data) {
			add(f.Path, Modified, "content would change", "")
			writeDiff(text, display, old, want, true, true)
		}
		return nil
	}
	// At least one side is too large to show: compare by streaming.
	same := old.size == want.size
	if same {
		a, err := disk.open(f.Path, have)
		if err != nil {
			return err
		}
		defer a.Close()
		b, err := w.open(f)
		if err != nil {
			return err
		}
		defer b.Close()
		if same, err = sameContent(a, b); err != nil {
			return &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot compare %s: %v", display, err), Hint: "check its permissions", Err: err}
		}
	}
	if !same {
		add(f.Path, Modified, "content would change",
			fmt.Sprintf("Files a/%s and b/%s differ (%d -> %d bytes; larger than %d bytes, not shown)\n", display, display, old.size, want.size, diffLimit))
	}
	return nil
}

// sample is what Diff knows of one side of a file: its size; its content
// when it is at most diffLimit bytes; whether it is secret; and, for a
// secret file, the SHA-256 of its content.
type sample struct {
	size   int64
	data   []byte // nil when larger than diffLimit
	secret bool
	sum    []byte
}

func (s sample) short() string {
	if s.sum == nil {
		return "?"
	}
	return hex.EncodeToString(s.sum[:6]) + "…"
}

// newSample makes the sample of a file at slash path rel with size bytes,
// reading its content from open when it is small enough to keep.
func newSample(rel string, size int64, open func() (io.ReadCloser, error)) (sample, error) {
	s := sample{size: size, secret: secretFile(rel)}
	if size > diffLimit && !s.secret {
		return s, nil
	}
	r, err := open()
	if err != nil {
		return s, err
	}
	defer r.Close()
	if size > diffLimit {
		s.sum, err = sha256Of(r)
		return s, err
	}
	data, err := io.ReadAll(io.LimitReader(r, diffLimit+1))
	if data == nil {
		data = []byte{}
	}
	return s.holding(data), err
}

// holding is s holding data, the whole file: a secret one (by its path, or
// holding a private key) keeps the SHA-256 of data instead.
func (s sample) holding(data []byte) sample {
	s.data, s.secret = data, s.secret || holdsPrivateKey(data)
	if s.secret {
		sum := sha256.Sum256(data)
		s.sum, s.data = sum[:], nil
	}
	return s
}

// sample is the sample of what f will hold.
func (w *Workspace) sample(f *File) (sample, error) {
	if f.Source == "" {
		return sample{size: int64(len(f.Data)), secret: secretFile(f.Path)}.holding(f.Data), nil
	}
	s, err := newSample(f.Path, f.Expect.Size, func() (io.ReadCloser, error) { return w.open(f) })
	if err != nil {
		return s, w.readError(f, err)
	}
	return s, nil
}

// hash is the SHA-256 of what f will hold.
func (w *Workspace) hash(f *File) ([]byte, error) {
	sum, err := sumOf(w.open(f))
	if err != nil {
		return nil, w.readError(f, err)
	}
	return sum, nil
}

// open opens the kit file f is copied from, checking that it is still the
// regular file scanned (never blocking on a named pipe).
func (w *Workspace) open(f *File) (io.ReadCloser, error) {
	if f.Source == "" {
		return io.NopCloser(bytes.NewReader(f.Data)), nil
	}
	r, err := dirfd.OpenRegular(f.Source, f.Expect)
	if err != nil {
		return nil, w.readError(f, err)
	}
	// No more than the size the scan saw (and checked against the kit's
	// limits) is read, whatever the file holds by now.
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(r, f.Expect.Size), r}, nil
}

func (w *Workspace) readError(f *File, err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	if w.keptSource(f.Source) {
		return w.keptChanged(err, "")
	}
	if e := w.kitChanged(err, ""); e != nil {
		return e
	}
	return &Error{Code: errcode.InvalidKit, Message: fmt.Sprintf("cannot read %s: %v", w.name(f.Source), fsx.Pathless(err)), Hint: "check the permissions of the kit", Err: err}
}

// content returns what f will hold, whole (for the small JSON files
// prepare rewrites).
func (w *Workspace) content(f *File) ([]byte, error) {
	r, err := w.open(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, w.readError(f, err)
	}
	return data, nil
}

// diskTree is the workspace on disk, listed through descriptors (never
// following a symlink): each path with its type, mode and identity.
type diskTree struct {
	root    *dirfd.Dir // nil when the workspace does not exist
	entries map[string]diskEntry
	names   givenPaths // messages name its files as given
}

type diskEntry struct {
	mode   fs.FileMode
	expect dirfd.Expect
}

// openTree lists the tree at root; a missing root is an empty tree.
func openTree(root string, names givenPaths) (*diskTree, error) {
	t := &diskTree{entries: map[string]diskEntry{}, names: names}
	d, err := dirfd.Open(root)
	if errors.Is(err, unix.ENOENT) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	t.root = d
	st := d.Stat()
	t.entries["."] = diskEntry{mode: dirfd.ModeOf(st.Mode), expect: dirfd.ExpectOf(&st)}
	if err := t.walk(d, "."); err != nil {
		d.Close()
		return nil, err
	}
	return t, nil
}

func (t *diskTree) walk(d *dirfd.Dir, rel string) error {
	ents, err := d.Entries()
	if err != nil {
		return err
	}
	for _, e := range ents {
		st, err := d.Lstat(e.Name())
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
		p := path.Join(rel, e.Name())
		t.entries[p] = diskEntry{mode: dirfd.ModeOf(st.Mode), expect: dirfd.ExpectOf(&st)}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := d.OpenDir(e.Name())
		if err != nil {
			return err
		}
		err = t.walk(sub, p)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// open opens the regular file rel of the tree, which must still be the
// file listed.
func (t *diskTree) open(rel string, e diskEntry) (io.ReadCloser, error) {
	d, err := t.root.OpenBeneath(path.Dir(rel))
	if err != nil {
		return nil, t.readError(rel, err)
	}
	defer d.Close()
	f, err := d.OpenRegular(path.Base(rel), e.expect)
	if err != nil {
		return nil, t.readError(rel, err)
	}
	return f, nil
}

func (t *diskTree) sample(rel string, e diskEntry) (sample, error) {
	s, err := newSample(rel, e.expect.Size, func() (io.ReadCloser, error) { return t.open(rel, e) })
	if err != nil {
		return s, t.readError(rel, err)
	}
	return s, nil
}

func (t *diskTree) readError(rel string, err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Code: errcode.PrepareFailed, Message: fmt.Sprintf("cannot read %s: %v", t.names.name(t.root.Join(rel)), fsx.Pathless(err)),
		Hint: "check its permissions; the workspace may be changing (is a parent running in it?)", Err: err}
}

// sumOf is the SHA-256 of what r (opened with err) holds; it closes r.
func sumOf(r io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return sha256Of(r)
}

func sha256Of(r io.Reader) ([]byte, error) {
	h := sha256.New()
	buf := hashBuffers.Get().(*[]byte)
	defer hashBuffers.Put(buf)
	if _, err := io.CopyBuffer(h, r, *buf); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// hashBuffers are sha256Of's copy buffers: prepare hashes every file of
// the local/ record, and a buffer for each (io.Copy's) was a tenth of
// the memory a small kit's prepare allocates, never collected (issue 27
// item 4).
var hashBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// sameContent compares two readers to their end, a block at a time.
func sameContent(a, b io.Reader) (bool, error) {
	const block = 256 << 10
	bufA, bufB := make([]byte, block), make([]byte, block)
	for {
		n, errA := io.ReadFull(a, bufA)
		m, errB := io.ReadFull(b, bufB)
		if errA != nil && errA != io.EOF && errA != io.ErrUnexpectedEOF {
			return false, errA
		}
		if errB != nil && errB != io.EOF && errB != io.ErrUnexpectedEOF {
			return false, errB
		}
		if !bytes.Equal(bufA[:n], bufB[:m]) {
			return false, nil
		}
		if errA != nil || errB != nil {
			return errA != nil && errB != nil, nil
		}
	}
}

// isText says whether b is shown line by line: small, valid UTF-8, and
// free of NUL and of control characters other than tab, newline, carriage
// return and form feed (an escape sequence in a diff would run in the
// reader's terminal).
func isText(b []byte) bool {
	if len(b) > diffLimit || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' && r != '\f' {
			return false
		}
	}
	return true
}

// writeDiff writes a unified diff of one file; a side that does not exist
// is shown as /dev/null. Neither side is secret.
func writeDiff(out *strings.Builder, name string, a, b sample, aExists, bExists bool) {
	from, to := "a/"+name, "b/"+name
	if !aExists {
		from = "/dev/null"
	}
	if !bExists {
		to = "/dev/null"
	}
	if (aExists && (a.data == nil || !isText(a.data))) || (bExists && (b.data == nil || !isText(b.data))) {
		fmt.Fprintf(out, "Binary files %s and %s differ\n", from, to)
		return
	}
	text, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a.data), B: lines(b.data), FromFile: from, ToFile: to, Context: 3,
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

// keptChanged is the error of a file kept from a workspace's local/ that
// is no longer the file scanned (the workspace changed while prepare ran,
// not the kit); after is added to the hint.
func (w *Workspace) keptChanged(err error, after string) error {
	var notRegular *dirfd.NotRegularError
	var changed *dirfd.ChangedError
	hint := "re-run prepare once nothing writes in the workspace's local/ (is a parent or a job running in it?)" + after
	switch {
	case errors.As(err, &notRegular):
		return &Error{Code: errcode.PrepareFailed, Err: err, Hint: hint,
			Message: fmt.Sprintf("the workspace changed while prepare ran: %s, kept from its local/, is now a %s; prepare keeps regular files only", w.name(notRegular.Path), schema.FileKind(notRegular.Mode))}
	case errors.As(err, &changed):
		return &Error{Code: errcode.PrepareFailed, Err: err, Hint: hint,
			Message: "the workspace changed while prepare ran: " + w.changedText(changed) + " (a file kept from its local/)"}
	}
	return &Error{Code: errcode.PrepareFailed, Err: err, Hint: "check its permissions" + after,
		Message: fmt.Sprintf("cannot read a file kept from the workspace's local/: %v", err)}
}

// kitChanged is the error of a kit file that changed while prepare read it
// (err a *dirfd.NotRegularError or *dirfd.ChangedError), after ending each
// hint; nil for any other err.
func (w *Workspace) kitChanged(err error, after string) *Error {
	var notRegular *dirfd.NotRegularError
	var changed *dirfd.ChangedError
	switch {
	case errors.As(err, &notRegular):
		return &Error{Code: errcode.InvalidKit, Err: err,
			Message: fmt.Sprintf("the kit changed while prepare ran: %s is now a %s; prepare copies regular files only", w.name(notRegular.Path), schema.FileKind(notRegular.Mode)),
			Hint:    "remove it from the kit and re-run prepare" + after}
	case errors.As(err, &changed):
		return &Error{Code: errcode.InvalidKit, Err: err, Message: "the kit changed while prepare ran: " + w.changedText(changed),
			Hint: "re-run prepare once nothing changes the kit" + after}
	}
	return nil
}

// changedText is the text of e naming its file as given.
func (w *Workspace) changedText(e *dirfd.ChangedError) string {
	named := *e
	named.Path = w.name(e.Path)
	return named.Error()
}
