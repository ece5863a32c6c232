package prepare

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/problem"
	"github.com/flare-slurm/flare-slurm/schema"
)

// The workspace's local/ is where people write: the study admin's
// study_runtime.yaml (examples/study_runtime.yaml says to put it there), a
// site's resources.json override, files they add. A re-prepare replaced
// the workspace and dropped them silently (issue 25 item 2). The rule:
//
//   - prepare records what it writes into local/: every directory, and the
//     SHA-256 of every file (staging.LocalManifestPath, staged with the
//     rest of the tree). The files it writes from the config
//     (resources.json.default, comm_config.json, the bridge module) are
//     always its own: edit slurm.yaml or the kit instead.
//   - On a re-prepare of a workspace prepared for this output, an entry of
//     its local/ is a person's when prepare did not write it, or when its
//     content differs from what prepare recorded (an edit). Only a
//     person's files are carried into the new workspace, as they are (mode
//     and modification time), with the modes of their directories; a
//     person's empty directory is kept too. prepare's own unedited files
//     are replaced by what the new kit and config give (a re-provisioned
//     kit's authorization.json.default reaches the workspace). A person's
//     file that the new workspace holds with the same content anyway is
//     not carried (it is prepare's again).
//   - A workspace prepared before the record existed: every entry is a
//     person's, as before, and one warning says so.
//   - Each kept path is a prepare-local-kept warning and is listed in
//     Result.Kept; prepare --check reports each as its own kind of
//     difference (Kept), drift unless it is local/study_runtime.yaml, an
//     empty directory, or named with --keep-local (check.go).
//   - Refused, naming each path and the fix, with nothing written: a
//     symlink, named pipe, socket or device in local/ (prepare never writes
//     one; a link is never followed), a person's file or directory where
//     the new workspace has a directory or file (the kit now shadows it),
//     a person's file above schema.MaxKitFileBytes, and more than
//     schema.MaxKitBytes of kit and kept files in all (checked on the scan,
//     before anything is read or copied).
//
// The old workspace is read through directory descriptors, never
// following a symlink, and each kept file is copied by the staging code
// like a kit file: it must still be the file scanned, and no more than the
// scanned size is copied.

// preparedLocalFiles are the files under local/ prepare writes from the
// config, never carried over.
var preparedLocalFiles = []string{resourcesDefault, commConfig, bridge.File}

// Why an entry of the old local/ is a person's (Kept changes say it after
// "kept: ").
const (
	keptNotWritten = "not written by prepare"
	keptEdited     = "edited since prepare wrote it"
	keptUnrecorded = "in a workspace prepared before prepare recorded what it writes"
)

// carried is one local/ entry carried over from an existing workspace, and
// what the new workspace held at its path before (nil: nothing).
type carried struct {
	path     string
	replaced *File
	// reason says why the entry is a person's; "" for a directory added
	// only as the parent of a kept file.
	reason string
}

// recordLocal adds staging.LocalManifestPath to w: what w (the new
// workspace, before anything is carried into it) holds under local/.
func (w *Workspace) recordLocal() error {
	m := staging.LocalManifest{Files: map[string]string{}}
	for _, f := range w.Files {
		if f.Path != schema.LocalDir && !strings.HasPrefix(f.Path, schema.LocalDir+"/") {
			continue
		}
		if f.Dir {
			m.Dirs = append(m.Dirs, f.Path)
			continue
		}
		sum, err := w.hash(f)
		if err != nil {
			return err
		}
		m.Files[f.Path] = hex.EncodeToString(sum)
	}
	switch f := w.File(schema.ControlDir); {
	case f == nil:
		w.addDir(schema.ControlDir, 0o700)
	case !f.Dir:
		return errorf(errcode.InvalidKit, "remove that file from the kit", "%s is a file in the kit %s; prepare records what it writes in that directory", schema.ControlDir, w.name(w.Kit))
	default:
		f.Mode = 0o700 // the runtime refuses a control area others can read
	}
	if f := w.File(staging.LocalManifestPath); f != nil && f.Dir {
		return errorf(errcode.InvalidKit, "remove that directory from the kit", "%s is a directory in the kit %s; prepare must replace it", staging.LocalManifestPath, w.name(w.Kit))
	}
	w.put(staging.LocalManifestPath, m.Encode(), 0o600)
	return nil
}

// oldEntry is one entry of the old workspace's local/, as the scan saw it.
type oldEntry struct {
	rel, abs string
	st       unix.Stat_t
	mode     fs.FileMode
	link     string // a symlink's target, for messages
	// reason is why the entry is a person's (keptNotWritten, keptEdited,
	// keptUnrecorded), "" when prepare wrote it as it is.
	reason string
	// fromConfig: a file prepare writes from the config, never kept.
	fromConfig bool
	// children is a directory's number of entries.
	children int
	// personal: something of a person's (a person's file or directory,
	// a link or special file) is at or below the entry.
	personal bool
}

func (e *oldEntry) expect() dirfd.Expect { return dirfd.ExpectOf(&e.st) }

// localScan is one reading of an old workspace's local/.
type localScan struct {
	w        *Workspace
	root     string                 // the old workspace (or the copy --against compares)
	manifest *staging.LocalManifest // nil: none, or unusable (manifestErr)
	entries  []*oldEntry            // in path order, a directory before its entries
	dirModes map[string]fs.FileMode // the mode of each directory, by slash path
	// fileDir is the open directory of each directory and regular file
	// (by slash path): files are read through it, never by path.
	fileDir map[string]*dirfd.Dir
}

// carryLocal carries what a person wrote in the local/ of the workspace at
// root (when it is a workspace prepared for w.Output) into w, undoing an
// earlier carryLocal first. It refuses (nothing is written) what it cannot
// keep. Per-file warnings go to w.keptNotes, a note on a workspace without
// a record of what prepare wrote to w.localNote.
func (w *Workspace) carryLocal(root string) error {
	w.uncarry()
	defer w.sortFiles()
	out, err := dirfd.Open(root)
	if err != nil {
		return nil // absent, not a directory, unusable: StagingOpen reports it
	}
	defer out.Close()
	if !staging.IsWorkspaceOf(out, w.Output) {
		return nil
	}
	local, err := out.OpenDir(schema.LocalDir)
	if err != nil {
		return nil // IsWorkspaceOf read local/: it changed since; the staging's checks see it
	}
	s := &localScan{w: w, root: root, fileDir: map[string]*dirfd.Dir{}, dirModes: map[string]fs.FileMode{}}
	defer func() {
		for _, d := range s.fileDir {
			d.Close() // a directory shared by its files: Close is idempotent
		}
	}()
	var manifestErr error
	s.manifest, manifestErr = staging.ReadLocalManifest(out) // nil on an error
	if _, _, err := s.scan(local, filepath.Join(root, schema.LocalDir), schema.LocalDir); err != nil {
		return err
	}
	if err := s.apply(); err != nil {
		return err
	}
	if s.manifest == nil && len(w.carried) > 0 {
		record := w.name(filepath.Join(root, filepath.FromSlash(staging.LocalManifestPath)))
		why := fmt.Sprintf("the workspace %s holds no record of what prepare wrote into its local/ (%s; it was prepared by an earlier flare-slurm)", w.name(root), record)
		if manifestErr != nil {
			why = fmt.Sprintf("the record of what prepare wrote into the local/ of %s (%s) cannot be used: %v", w.name(root), record, fsx.Pathless(manifestErr))
		}
		w.localNote = why + ", so every file there that differs from the new workspace's is kept as a person's, copies of an earlier kit's files too: " +
			"delete from local/ what no person wrote to take the kit's (the next prepare records what it writes) [" + schema.WarnPrepareLocalKept + "]"
	}
	return nil
}

// scan lists the directory d (abs on disk, rel in the workspace) into
// s.entries, deciding for each entry whether it is a person's. It says
// whether anything of a person's lies below d, and how many entries d
// holds.
func (s *localScan) scan(d *dirfd.Dir, abs, rel string) (personal bool, count int, err error) {
	s.fileDir[rel] = d // closed with the scan
	names, err := d.Names()
	if err != nil {
		return false, 0, s.readFailure(abs, err)
	}
	slices.Sort(names)
	for _, name := range names {
		st, err := d.Lstat(name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return false, 0, s.readFailure(filepath.Join(abs, name), err)
		}
		count++
		e := &oldEntry{rel: path.Join(rel, name), abs: filepath.Join(abs, name), st: st, mode: dirfd.ModeOf(st.Mode)}
		s.entries = append(s.entries, e)
		switch {
		case e.mode.IsDir():
			if s.manifest == nil {
				e.reason = keptUnrecorded
			} else if !slices.Contains(s.manifest.Dirs, e.rel) {
				e.reason = keptNotWritten
			}
			s.dirModes[e.rel] = e.mode.Perm()
			sub, err := d.OpenDir(name)
			if err != nil {
				return false, 0, s.readFailure(e.abs, err)
			}
			below, n, err := s.scan(sub, e.abs, e.rel)
			if err != nil {
				return false, 0, err
			}
			e.children = n
			e.personal = below || e.reason != ""
		case e.mode.IsRegular():
			if slices.Contains(preparedLocalFiles, e.rel) {
				e.fromConfig = true
				continue
			}
			s.fileDir[e.rel] = d
			if e.reason, err = s.fileReason(d, name, e); err != nil {
				return false, 0, err
			}
			e.personal = e.reason != ""
		default:
			e.personal = true // refused: prepare never writes one
			if e.mode&fs.ModeSymlink != 0 {
				buf := make([]byte, 4096)
				e.link = "?" // for messages only
				if n, err := unix.Readlinkat(d.Fd(), name, buf); err == nil {
					e.link = string(buf[:n])
				}
			}
		}
		personal = personal || e.personal
	}
	return personal, count, nil
}

// fileReason says why the regular file e (name in d) is a person's, or ""
// when it holds what prepare recorded writing there.
func (s *localScan) fileReason(d *dirfd.Dir, name string, e *oldEntry) (string, error) {
	if s.manifest == nil {
		return keptUnrecorded, nil
	}
	want, ok := s.manifest.Files[e.rel]
	switch {
	case !ok:
		return keptNotWritten, nil
	case e.st.Size > schema.MaxKitFileBytes:
		return keptEdited, nil // prepare never wrote one; not read (refused by apply)
	}
	r, err := d.OpenRegular(name, e.expect())
	if err != nil {
		return "", s.readFailure(e.abs, err)
	}
	defer r.Close()
	sum, err := sha256Of(io.LimitReader(r, e.st.Size))
	if err != nil {
		return "", s.readFailure(e.abs, err)
	}
	if hex.EncodeToString(sum) == want {
		return "", nil
	}
	return keptEdited, nil
}

// apply carries the person's entries of the scan into the new workspace,
// or refuses, listing every entry it cannot keep.
func (s *localScan) apply() error {
	w := s.w
	var problems schema.Problems
	refuse := func(e *oldEntry, message, hint string) {
		problems = append(problems, schema.Problem{Kind: problem.Layout, File: w.name(e.abs), Message: message, Hint: hint})
	}
	const moveAway = "move it out of the workspace (or take the entry out of the kit), then re-run prepare; nothing was written"
	skipBelow := ""
	for _, e := range s.entries {
		if skipBelow != "" && strings.HasPrefix(e.rel, skipBelow+"/") {
			continue
		}
		now := w.File(e.rel)
		switch {
		case !e.mode.IsDir() && !e.mode.IsRegular():
			message := fmt.Sprintf("%s in local/, which prepare did not write; prepare keeps the regular files and directories a person wrote there", schema.FileKind(e.mode))
			hint := "move it out of the workspace (or delete it); nothing was written"
			if e.mode&fs.ModeSymlink != 0 {
				message = fmt.Sprintf("symlink (to %q) in local/, which prepare did not write; prepare keeps the regular files and directories a person wrote there and never follows a link", e.link)
				hint = "replace the link by a copy of the file it points to, or move it out of the workspace; nothing was written"
			}
			refuse(e, message, hint)
		case e.mode.IsDir():
			if now == nil || now.Dir {
				if now == nil && e.reason != "" && e.children == 0 {
					s.keepDir(e)
				}
				continue
			}
			skipBelow = e.rel
			if e.personal {
				refuse(e, fmt.Sprintf("a directory holding what prepare did not write (%s), where the new workspace has a file; prepare would have to drop one of them", s.personalBelow(e)), moveAway)
			}
		case e.fromConfig || e.reason == "":
			// prepare's own: replaced by what the new workspace holds there
		case now != nil && now.Dir:
			refuse(e, fmt.Sprintf("a file %s, where the new workspace has a directory; prepare would have to drop one of them", e.reason), moveAway)
		case e.st.Size > schema.MaxKitFileBytes:
			refuse(e, fmt.Sprintf("is %d bytes; prepare keeps files of at most %d bytes (512 MiB) from local/, as from a kit", e.st.Size, schema.MaxKitFileBytes),
				"move it out of the workspace's local/ (keep large data elsewhere on the shared filesystem); nothing was written")
		default:
			if err := s.keepFile(e, now); err != nil {
				return err
			}
		}
	}
	var total int64
	for _, f := range w.Files {
		if f.Source != "" {
			total += f.Expect.Size
		}
	}
	if total > schema.MaxKitBytes {
		problems = append(problems, schema.Problem{Kind: problem.Layout, File: w.name(filepath.Join(s.root, schema.LocalDir)),
			Message: fmt.Sprintf("the kit's files and the files kept from local/ hold %d bytes; prepare copies at most %d bytes (2 GiB)", total, schema.MaxKitBytes),
			Hint:    "move large files out of the workspace's local/ (keep large data elsewhere on the shared filesystem); nothing was written"})
	}
	if len(problems) > 0 {
		w.uncarry()
		return &Error{Code: errcode.LocalRefused, Problems: problems,
			Message: fmt.Sprintf("the workspace %s holds %d path(s) in local/ that prepare cannot keep", w.name(s.root), len(problems)),
			Hint:    hintFixProblems}
	}
	return nil
}

// personalBelow names (at most three of) the person's entries at or below
// the directory e.
func (s *localScan) personalBelow(e *oldEntry) string {
	var names []string
	n := 0
	for _, c := range s.entries {
		if !strings.HasPrefix(c.rel, e.rel+"/") || c.fromConfig || (c.reason == "" && (c.mode.IsDir() || c.mode.IsRegular())) {
			continue
		}
		if c.mode.IsDir() && c.children > 0 {
			continue // its entries are named
		}
		n++
		if len(names) < 3 {
			names = append(names, c.rel)
		}
	}
	switch {
	case n == 0:
		return "the directory itself"
	case n > len(names):
		return fmt.Sprintf("%s and %d more", strings.Join(names, ", "), n-len(names))
	}
	return strings.Join(names, ", ")
}

// keepFile carries the person's file e into the new workspace, where now
// is what it held at that path (nil: nothing), unless now holds the same.
func (s *localScan) keepFile(e *oldEntry, now *File) error {
	w := s.w
	old := &File{Path: e.rel, Mode: e.mode.Perm(), Source: e.abs, ModTime: time.Unix(e.st.Mtim.Unix()), Expect: e.expect()}
	if now != nil {
		same, err := s.sameFile(now, e)
		if err != nil || same {
			return err
		}
	}
	why := e.reason
	switch {
	case e.rel == studyRuntime && now != nil && now.Source == "":
		why = "the study admin's, where the kit has none; " + e.reason
	case now != nil:
		why = "it differs from the kit's; delete it from the workspace, or copy it into the kit, to take the kit's; " + e.reason
	case e.rel == resourcesActive:
		why = "it overrides the settings prepare wrote to resources.json.default, which NVFlare and flare-slurm read only without it; delete it to use them; " + e.reason
	}
	s.ensureDirs(path.Dir(e.rel))
	c := carried{path: e.rel, reason: e.reason}
	if now != nil {
		cp := *now
		c.replaced = &cp
		*now = *old
	} else {
		w.add(old)
	}
	w.carried = append(w.carried, c)
	w.Result.Kept = append(w.Result.Kept, e.rel)
	w.keptNotes = append(w.keptNotes, fmt.Sprintf("kept %s from the workspace %s (%s) [%s]", e.rel, w.name(s.root), why, schema.WarnPrepareLocalKept))
	return nil
}

// keepDir carries the person's empty directory e into the new workspace.
func (s *localScan) keepDir(e *oldEntry) {
	w := s.w
	s.ensureDirs(path.Dir(e.rel))
	w.addDir(e.rel, e.mode)
	w.carried = append(w.carried, carried{path: e.rel, reason: e.reason})
	w.Result.Kept = append(w.Result.Kept, e.rel+"/")
	w.keptNotes = append(w.keptNotes, fmt.Sprintf("kept the empty directory %s/ from the workspace %s (%s) [%s]", e.rel, w.name(s.root), e.reason, schema.WarnPrepareLocalKept))
}

// ensureDirs adds the directories of rel (and its parents) that the new
// workspace lacks, with the modes they have in the old workspace.
func (s *localScan) ensureDirs(rel string) {
	w := s.w
	if rel == "." || rel == "" || w.File(rel) != nil {
		return
	}
	s.ensureDirs(path.Dir(rel))
	mode, ok := s.dirModes[rel]
	if !ok {
		mode = 0o755
	}
	w.addDir(rel, mode)
	w.carried = append(w.carried, carried{path: rel})
}

// uncarry undoes carryLocal.
func (w *Workspace) uncarry() {
	for i := len(w.carried) - 1; i >= 0; i-- {
		c := w.carried[i]
		if c.replaced != nil {
			*w.index[c.path] = *c.replaced
			continue
		}
		w.remove(c.path)
	}
	w.carried, w.Result.Kept, w.keptNotes, w.localNote = nil, nil, nil, ""
}

// keptSource says whether the file at source is one kept from a
// workspace's local/ (not a kit file).
func (w *Workspace) keptSource(source string) bool {
	return slices.ContainsFunc(w.carried, func(c carried) bool {
		f := w.File(c.path)
		return c.reason != "" && f != nil && !f.Dir && f.Source == source
	})
}

// sameFile says whether the new workspace's f holds what the old file e
// holds (mode and content).
func (s *localScan) sameFile(f *File, e *oldEntry) (bool, error) {
	w := s.w
	if f.Mode != e.mode.Perm() {
		return false, nil
	}
	want, err := w.sample(f)
	if err != nil {
		return false, err
	}
	if want.size != e.st.Size {
		return false, nil
	}
	a, err := w.open(f)
	if err != nil {
		return false, err
	}
	defer a.Close()
	r, err := s.fileDir[e.rel].OpenRegular(path.Base(e.rel), e.expect())
	if err != nil {
		return false, s.readFailure(e.abs, err)
	}
	defer r.Close()
	same, err := sameContent(a, io.LimitReader(r, e.st.Size))
	if err != nil {
		return false, s.readFailure(e.abs, err)
	}
	return same, nil
}

func (s *localScan) readFailure(p string, err error) error {
	return &Error{Code: errcode.PrepareFailed, Message: "cannot read " + s.w.name(p) + " of the existing workspace: " + fsx.Pathless(err).Error(),
		Hint: "check its permissions; prepare keeps the files a person wrote in local/", Err: err}
}
