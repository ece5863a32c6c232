package compile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/schema"
)

// ReviewFile is one file of a reviewer's dry run (flare-slurm render), or
// of a job dir (WriteJobDir).
type ReviewFile struct {
	Name string
	Data []byte
	Mode os.FileMode
}

// ReviewFiles are the files `flare-slurm render` writes for a compiled
// job, in a fixed order: batch.sh, node.sh (node groups only), secret.env,
// sbatch.argv.json, plan.json.
// a should come from CompileRedacted unless secrets are to be revealed.
func (p *Plan) ReviewFiles(a *Artifacts) ([]ReviewFile, error) {
	argv, err := marshalJSON(a.Argv)
	if err != nil {
		return nil, err
	}
	plan, err := marshalJSON(p.view)
	if err != nil {
		return nil, err
	}
	files := []ReviewFile{{batchFile, a.BatchScript, 0o700}}
	if a.NodeScript != nil {
		files = append(files, ReviewFile{nodeFile, a.NodeScript, 0o700})
	}
	return append(files,
		ReviewFile{secretFile, a.SecretEnv, 0o600},
		ReviewFile{"sbatch.argv.json", argv, 0o600},
		ReviewFile{"plan.json", plan, 0o600},
	), nil
}

// WriteReview writes files into dir, creating dir (0700) when it does not
// exist. Files are created exclusively: an existing file of the same name
// is an error. On any failure every file and the directory this call
// created are removed.
//
// With force, a file of the same name that exists is replaced (atomically,
// by a rename; a directory in the way is still an error); no other file of
// dir is touched, and a replaced file is not restored on failure.
func WriteReview(dir string, files []ReviewFile, force bool) (err error) {
	var created []string
	defer func() {
		if err != nil {
			for i := len(created) - 1; i >= 0; i-- {
				os.Remove(created[i])
			}
		}
	}()
	info, lerr := os.Lstat(dir)
	switch {
	case lerr == nil && !info.IsDir():
		return fmt.Errorf("output %s exists and is not a directory", dir)
	case lerr != nil && errors.Is(lerr, fs.ErrNotExist):
		if err := fsx.MkdirExclusive(dir, 0o700); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
		created = append(created, dir)
	case lerr != nil:
		return lerr
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if force {
			if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() {
				tmp, err := fsx.WriteTemp(path, f.Data, f.Mode, false)
				if err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				if err := os.Rename(tmp, path); err != nil {
					os.Remove(tmp)
					return fmt.Errorf("replace %s: %w", path, err)
				}
				continue
			} else if err == nil {
				return fmt.Errorf("%s exists and is not a regular file: render --force replaces only files", path)
			}
		}
		if err := fsx.WriteExclusive(path, f.Data, f.Mode, false); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s already exists: render writes into an empty or new directory (--force replaces its files)", path)
			}
			return fmt.Errorf("write %s: %w", path, err)
		}
		created = append(created, path)
	}
	return nil
}

// CheckReviewOutput refuses a review directory inside the workspace (after
// resolving symlinks like the mount sources): render must never write into
// the workspace a parent runs from.
func CheckReviewOutput(ws *schema.Workspace, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("output %s: %w", dir, err)
	}
	if real := realPathFrom("/", abs, nil); overlaps(real, ws.Root) {
		return fmt.Errorf("output %s resolves to %s, inside the workspace %s: render writes nothing into the workspace", dir, real, ws.Dir)
	}
	return nil
}
