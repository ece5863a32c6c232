package prepare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/workspace"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// scanKit lists the kit into w.Files. Regular files and directories are
// copied with their permission bits (setuid, setgid and sticky bits are
// dropped) and files keep their modification time. A symlink to a regular
// file is copied as the file it points to, as NVFlare's copytree does, so
// the workspace holds no link back into the kit. A symlink to a
// directory, a dangling symlink, any special file and anything that cannot
// be read are refused: the whole kit is scanned and every such path is
// reported at once, one problem each.
//
// Left out: the output itself and, when the output lies inside the kit,
// KIT/prepared (NVFlare's rule), plus every staging directory of a prepare
// of this output (".<base>.prepare-*" beside it).
func (w *Workspace) scanKit() error {
	st, err := os.Stat(w.Kit)
	if err != nil {
		return errorf(errcode.InvalidKit, "check the kit path", "cannot read the kit %s: %v", w.Kit, err)
	}
	w.addDir(".", st.Mode())
	excluded := map[string]bool{w.Output: true}
	if within(w.Output, w.Kit) {
		excluded[filepath.Join(w.Kit, "prepared")] = true
	}
	var problems schema.Problems
	w.scanDir(w.Kit, ".", excluded, &problems)
	if len(problems) > 0 {
		return &Error{Code: errcode.InvalidKit, Problems: problems,
			Message: fmt.Sprintf("the startup kit %s holds %d path(s) prepare cannot copy", w.Kit, len(problems)),
			Hint:    hintFixProblems}
	}
	return nil
}

func (w *Workspace) addDir(rel string, mode fs.FileMode) {
	f := &File{Path: rel, Dir: true, Mode: mode.Perm()}
	w.index[rel] = f
	w.Files = append(w.Files, f)
}

// kitPathProblem is one kit path prepare cannot copy.
func kitPathProblem(k problem.Kind, abs, message, hint string) schema.Problem {
	return schema.Problem{Kind: k, File: abs, Message: message, Hint: hint}
}

// scanDir adds the entries of dir (rel in the workspace) and appends a
// problem for every entry it cannot copy; it goes on after a problem.
func (w *Workspace) scanDir(dir, rel string, excluded map[string]bool, problems *schema.Problems) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		*problems = append(*problems, kitPathProblem(problem.Read, dir, fmt.Sprintf("cannot read this kit directory: %v", unwrapPathError(err)),
			"check the permissions of the kit"))
		// ReadDir returns the entries it could read before the error.
	}
	stagePrefix := workspace.StagingPrefix(w.Output)
	outParent := filepath.Dir(w.Output)
	for _, e := range entries {
		abs := filepath.Join(dir, e.Name())
		if excluded[abs] || (dir == outParent && strings.HasPrefix(e.Name(), stagePrefix)) {
			continue
		}
		childRel := path.Join(rel, e.Name())
		info, err := e.Info()
		if err != nil {
			*problems = append(*problems, kitPathProblem(problem.Read, abs, fmt.Sprintf("cannot inspect it: %v", unwrapPathError(err)), "check the kit"))
			continue
		}
		target, msg, hint := schema.KitEntry(abs, info.Mode())
		if msg != "" {
			*problems = append(*problems, kitPathProblem(problem.Layout, abs, msg, hint))
			continue
		}
		source := abs
		if target != nil {
			// A symlink to a regular file: copy its content. It is
			// resolved once, here; the copy opens the resolved path
			// without following symlinks and checks it is still the file
			// seen now.
			real, err := filepath.EvalSymlinks(abs)
			if err != nil {
				*problems = append(*problems, kitPathProblem(problem.Layout, abs, fmt.Sprintf("cannot resolve this symlink: %v", unwrapPathError(err)), "check the kit"))
				continue
			}
			info, source = target, real
		}
		switch {
		case info.IsDir():
			w.addDir(childRel, info.Mode())
			w.scanDir(abs, childRel, excluded, problems)
		case info.Mode().IsRegular():
			f := &File{Path: childRel, Mode: info.Mode().Perm(), Source: source, ModTime: info.ModTime()}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				f.Expect = dirfd.Expect{ID: dirfd.FileID{Dev: uint64(st.Dev), Ino: st.Ino}, Size: st.Size}
			}
			w.index[childRel] = f
			w.Files = append(w.Files, f)
		}
	}
}

// unwrapPathError drops the path of a *fs.PathError: the problem names the
// path already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readKitFile returns the current content of a workspace file: rendered
// data, or the kit file it will be copied from.
func (w *Workspace) readKitFile(rel string) ([]byte, bool, error) {
	f := w.File(rel)
	if f == nil || f.Dir {
		return nil, false, nil
	}
	data, err := w.content(f)
	return data, true, err
}
