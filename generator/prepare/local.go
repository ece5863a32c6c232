package prepare

import (
	"errors"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/workspace"
	"github.com/flare-slurm/flare-slurm/schema"
)

// The workspace's local/ is where people write: the study admin's
// study_runtime.yaml (examples/study_runtime.yaml says to put it there), a
// site's resources.json override, files they add. Replacing the workspace
// dropped them silently. prepare keeps them (issue 25 item 2).
//
// Rule: of a workspace prepared for this output, every regular file under
// local/ is carried into the new workspace, as it is, unless it is one
// prepare writes from the config (resources.json.default,
// comm_config.json, the bridge module: edit slurm.yaml or the kit instead)
// or the new workspace holds the same content there anyway. A file the kit
// holds too, with other content, is kept: it is a person's (or the kit
// changed since; delete the workspace's copy to take the kit's). Each kept
// file is a warning (prepare-local-kept) and is listed in Result.Kept.

// preparedLocalFiles are the files under local/ prepare writes from the
// config, never carried over.
var preparedLocalFiles = []string{resourcesDefault, commConfig, bridge.File}

// carried is one local/ file carried over from an existing workspace, and
// what the new workspace held at its path before (nil: nothing).
type carried struct {
	path     string
	replaced *File
}

// carryLocal carries the files a person wrote in the local/ of the
// workspace at root (when it is a workspace prepared for w.Output) into w,
// undoing an earlier carryLocal first.
func (w *Workspace) carryLocal(root string) error {
	w.uncarry()
	out, err := dirfd.Open(root)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return nil // StagingOpen reports an unusable output
	}
	defer out.Close()
	if !workspace.IsWorkspaceOf(out, w.Output) {
		return nil
	}
	local, err := out.OpenDir(schema.LocalDir)
	if err != nil {
		return nil
	}
	defer local.Close()
	return w.carryDir(local, filepath.Join(root, schema.LocalDir), schema.LocalDir)
}

func (w *Workspace) carryDir(d *dirfd.Dir, abs, rel string) error {
	names, err := d.Names()
	if err != nil {
		return readFailure(abs, err)
	}
	slices.Sort(names)
	for _, name := range names {
		st, err := d.Lstat(name)
		if err != nil {
			continue
		}
		childRel, childAbs := path.Join(rel, name), filepath.Join(abs, name)
		mode := dirfd.ModeOf(st.Mode)
		switch {
		case mode.IsDir():
			if f := w.File(childRel); f != nil && !f.Dir {
				continue // the new workspace has a file there
			}
			sub, err := d.OpenDir(name)
			if err != nil {
				return readFailure(childAbs, err)
			}
			err = w.carryDir(sub, childAbs, childRel)
			sub.Close()
			if err != nil {
				return err
			}
		case mode.IsRegular():
			if slices.Contains(preparedLocalFiles, childRel) {
				continue
			}
			old := &File{Path: childRel, Mode: mode.Perm(), Source: childAbs, ModTime: time.Unix(st.Mtim.Unix()), Expect: dirfd.ExpectOf(&st)}
			prev := w.File(childRel)
			if prev != nil && prev.Dir {
				continue
			}
			if prev != nil {
				same, err := w.sameFile(prev, old)
				if err != nil {
					return err
				}
				if same {
					continue
				}
			}
			why := "not written by prepare"
			switch {
			case childRel == studyRuntime && prev != nil && prev.rendered:
				why = "the study admin's, where the kit has none"
			case prev != nil:
				why = "it differs from the kit's; delete it from the workspace, or copy it into the kit, to take the kit's"
			case childRel == resourcesActive:
				why = "it overrides the settings prepare wrote to resources.json.default, which NVFlare and flare-slurm read only without it; delete it to use them"
			}
			w.ensureDirs(path.Dir(childRel))
			c := carried{path: childRel}
			if prev != nil {
				cp := *prev
				c.replaced = &cp
				*prev = *old
			} else {
				w.index[childRel] = old
				w.Files = append(w.Files, old)
			}
			w.carried = append(w.carried, c)
			w.Result.Kept = append(w.Result.Kept, childRel)
			w.warnf(schema.WarnPrepareLocalKept, "kept %s from the workspace %s (%s)", childRel, w.Output, why)
		}
		// anything else (a symlink, a special file) is not a person's file to keep
	}
	return nil
}

// ensureDirs adds the directories of rel (and its parents) that the new
// workspace lacks, 0755.
func (w *Workspace) ensureDirs(rel string) {
	if rel == "." || rel == "" || w.File(rel) != nil {
		return
	}
	w.ensureDirs(path.Dir(rel))
	w.addDir(rel, 0o755)
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
	w.carried, w.Result.Kept = nil, nil
	kept := w.Result.Warnings[:0]
	for _, m := range w.Result.Warnings {
		if !strings.HasSuffix(m, "["+schema.WarnPrepareLocalKept+"]") {
			kept = append(kept, m)
		}
	}
	w.Result.Warnings = kept
}

// sameFile says whether the new workspace's f holds what the old file
// holds.
func (w *Workspace) sameFile(f, old *File) (bool, error) {
	if f.Mode != old.Mode {
		return false, nil
	}
	want, err := w.sample(f)
	if err != nil {
		return false, err
	}
	if want.size != old.Expect.Size {
		return false, nil
	}
	a, err := w.open(f)
	if err != nil {
		return false, err
	}
	defer a.Close()
	r, err := dirfd.OpenRegular(old.Source, old.Expect)
	if err != nil {
		return false, readFailure(old.Source, err)
	}
	defer r.Close()
	same, err := sameContent(a, io.LimitReader(r, old.Expect.Size))
	if err != nil {
		return false, readFailure(old.Source, err)
	}
	return same, nil
}

func readFailure(p string, err error) error {
	return &Error{Code: errcode.PrepareFailed, Message: "cannot read " + p + " of the existing workspace: " + unwrapPathError(err).Error(),
		Hint: "check its permissions; prepare keeps the files a person wrote in local/", Err: err}
}
