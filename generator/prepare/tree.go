package prepare

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// scanKit lists the kit into w.Files. Regular files and directories are
// copied with their permission bits (setuid, setgid and sticky bits are
// dropped) and files keep their modification time. A symlink to a regular
// file is copied as the file it points to, as NVFlare's copytree does, so
// the workspace holds no link back into the kit. A symlink to a
// directory, a dangling symlink and any special file are refused.
//
// Left out: the output itself and, when the output lies inside the kit,
// KIT/prepared (NVFlare's rule), plus every staging directory of a prepare
// of this output (".<base>.prepare-*" beside it).
func (w *Workspace) scanKit() error {
	st, err := os.Stat(w.Kit)
	if err != nil {
		return errorf(CodeInvalidKit, "check the kit path", "cannot read the kit %s: %v", w.Kit, err)
	}
	w.addDir(".", st.Mode())
	excluded := map[string]bool{w.Output: true}
	if within(w.Output, w.Kit) {
		excluded[filepath.Join(w.Kit, "prepared")] = true
	}
	return w.scanDir(w.Kit, ".", excluded)
}

func (w *Workspace) addDir(rel string, mode fs.FileMode) {
	f := &File{Path: rel, Dir: true, Mode: mode.Perm()}
	w.index[rel] = f
	w.Files = append(w.Files, f)
}

func (w *Workspace) scanDir(dir, rel string, excluded map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errorf(CodeInvalidKit, "check the permissions of the kit", "cannot read kit directory %s: %v", dir, err)
	}
	stagePrefix := stagingPrefix(w.Output)
	outParent := filepath.Dir(w.Output)
	for _, e := range entries {
		abs := filepath.Join(dir, e.Name())
		if excluded[abs] || (dir == outParent && strings.HasPrefix(e.Name(), stagePrefix)) {
			continue
		}
		childRel := path.Join(rel, e.Name())
		info, err := e.Info()
		if err != nil {
			return errorf(CodeInvalidKit, "check the kit", "cannot inspect %s: %v", abs, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Stat(abs)
			switch {
			case err != nil:
				return errorf(CodeInvalidKit, "remove the symlink or make it point at a regular file",
					"kit symlink %s cannot be followed: %v", abs, err)
			case target.IsDir():
				return errorf(CodeInvalidKit, "replace the symlink with a real directory",
					"kit symlink %s points to a directory; prepare copies regular files and real directories only", abs)
			case !target.Mode().IsRegular():
				return errorf(CodeInvalidKit, "remove it from the kit", "kit symlink %s points to a special file", abs)
			}
			info = target
		}
		switch {
		case info.IsDir():
			w.addDir(childRel, info.Mode())
			if err := w.scanDir(abs, childRel, excluded); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			f := &File{Path: childRel, Mode: info.Mode().Perm(), Source: abs, ModTime: info.ModTime()}
			w.index[childRel] = f
			w.Files = append(w.Files, f)
		default:
			return errorf(CodeInvalidKit, "remove it from the kit", "%s is a %s; a kit holds regular files and directories only",
				abs, fmt.Sprint(info.Mode().Type()))
		}
	}
	return nil
}

// readKitFile returns the current content of a workspace file: rendered
// data, or the kit file it will be copied from.
func (w *Workspace) readKitFile(rel string) ([]byte, bool, error) {
	f := w.File(rel)
	if f == nil || f.Dir {
		return nil, false, nil
	}
	if f.rendered {
		return f.Data, true, nil
	}
	data, err := os.ReadFile(f.Source)
	if err != nil {
		return nil, true, errorf(CodeInvalidKit, "check the permissions of the kit", "cannot read %s: %v", f.Source, err)
	}
	return data, true, nil
}
