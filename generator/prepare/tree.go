package prepare

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/errcode"
	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/schema"

	"github.com/flare-slurm/flare-slurm/generator/prepare/staging"
	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// scanKit lists the kit into w.Files. Regular files and directories are
// copied with their permission bits (setuid, setgid and sticky bits are
// dropped) and files keep their modification time. Symlinks (a kit holds
// none: a link made a root prepare copy whatever it pointed at on the
// host), special files, anything that cannot be read, a file larger than
// schema.MaxKitFileBytes and more than schema.MaxKitBytes in all are
// refused: the whole kit is scanned and every such path is reported at
// once, one problem each, before anything is copied. The scan works
// through directory descriptors (internal/dirfd), never following a
// symlink: a directory swapped for a link while it runs is not entered.
//
// Left out: the output itself and, when the output lies inside the kit,
// KIT/prepared (NVFlare's rule), plus every staging directory of a prepare
// of this output (".<base>.prepare-*" beside it).
func (w *Workspace) scanKit() error {
	root, err := dirfd.Open(w.Kit)
	if err != nil {
		return errorf(errcode.InvalidKit, "check the kit path", "cannot read the kit %s: %v", w.name(w.Kit), fsx.Pathless(err))
	}
	defer root.Close()
	st := root.Stat()
	w.addDir(".", dirfd.ModeOf(st.Mode))
	excluded := map[string]bool{w.Output: true}
	if within(w.Output, w.Kit) {
		excluded[filepath.Join(w.Kit, "prepared")] = true
	}
	var problems schema.Problems
	var total int64
	// bad is one kit path prepare cannot copy, named as given.
	bad := func(k problem.Kind, abs, message, hint string) {
		problems = append(problems, schema.Problem{Kind: k, File: w.name(abs), Message: message, Hint: hint})
	}
	stagePrefix, outParent := staging.Prefix(w.Output), filepath.Dir(w.Output)
	// scan adds the entries of the kit directory d (abs on disk, rel in the
	// workspace) and a problem for every entry it cannot copy; it goes on
	// after a problem.
	var scan func(d *dirfd.Dir, abs, rel string)
	scan = func(d *dirfd.Dir, abs, rel string) {
		entries, err := d.Entries()
		if err != nil {
			bad(problem.Read, abs, fmt.Sprintf("cannot read this kit directory: %v", fsx.Pathless(err)), "check the permissions of the kit")
			// Entries returns the entries it could read before the error.
		}
		for _, e := range entries {
			childAbs := filepath.Join(abs, e.Name())
			if excluded[childAbs] || (abs == outParent && strings.HasPrefix(e.Name(), stagePrefix)) {
				continue
			}
			childRel := path.Join(rel, e.Name())
			st, err := d.Lstat(e.Name())
			if err != nil {
				bad(problem.Read, childAbs, fmt.Sprintf("cannot inspect it: %v", fsx.Pathless(err)), "check the kit")
				continue
			}
			mode := dirfd.ModeOf(st.Mode)
			if msg, hint := schema.KitEntry(childAbs, mode); msg != "" {
				bad(problem.Layout, childAbs, msg, hint)
				continue
			}
			if mode.IsDir() {
				sub, err := d.OpenDir(e.Name())
				if err != nil {
					bad(problem.Read, childAbs, fmt.Sprintf("cannot read this kit directory: %v", fsx.Pathless(err)), "check the permissions of the kit")
					continue
				}
				w.addDir(childRel, mode)
				scan(sub, childAbs, childRel)
				sub.Close()
				continue
			}
			if msg, hint := schema.KitSize(st.Size, false); msg != "" {
				bad(problem.Layout, childAbs, msg, hint)
				continue
			}
			total += st.Size
			w.add(&File{Path: childRel, Mode: mode.Perm(), Source: childAbs, ModTime: time.Unix(st.Mtim.Unix()), Expect: dirfd.ExpectOf(&st)})
		}
	}
	scan(root, w.Kit, ".")
	if msg, hint := schema.KitSize(total, true); msg != "" {
		bad(problem.Layout, w.Kit, msg, hint)
	}
	if len(problems) > 0 {
		return &Error{Code: errcode.InvalidKit, Problems: problems,
			Message: fmt.Sprintf("the startup kit %s holds %d path(s) prepare cannot copy", w.name(w.Kit), len(problems)),
			Hint:    hintFixProblems}
	}
	return nil
}

func (w *Workspace) addDir(rel string, mode fs.FileMode) {
	w.add(&File{Path: rel, Dir: true, Mode: mode.Perm()})
}
