package compile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
)

// writeExclusive is fsx.WriteExclusive; tests replace it to inject a
// failure half-way through a write.
var writeExclusive = fsx.WriteExclusive

// ErrStaleArtifacts is wrapped by WriteJobDir's error when the job dir
// already exists.
var ErrStaleArtifacts = errors.New("stale artifacts")

// WriteJobDir writes the artifacts into a.JobDir: the directory (0700),
// sandbox_root/ (0700, container sandboxes), secret.env (0600) and batch.sh
// (0700), each created exclusively and never through a symlink. Missing
// .nvflare_slurm/ and jobs/ directories are created (0700). With sync, every
// file and directory entry is fsynced. An existing job dir refuses the
// launch; on any failure everything this call created is removed.
func WriteJobDir(a *Artifacts, sync bool) (err error) {
	if a == nil || a.JobDir == "" || !filepath.IsAbs(a.JobDir) {
		return errors.New("compile: WriteJobDir needs artifacts with an absolute job dir")
	}
	jobsDir := filepath.Dir(a.JobDir)
	controlDir := filepath.Dir(jobsDir)
	var created []string // in creation order; removed in reverse on failure
	defer func() {
		if err == nil {
			return
		}
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
	}()
	for _, dir := range []string{controlDir, jobsDir} {
		made, derr := ensureDir(dir)
		if derr != nil {
			return derr
		}
		if made {
			created = append(created, dir)
		}
	}
	if err := fsx.MkdirExclusive(a.JobDir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w of job %s in %s: verify no allocation uses them before removal, then remove the directory to relaunch",
				ErrStaleArtifacts, a.JobID, a.JobDir)
		}
		return fmt.Errorf("create job directory: %w", err)
	}
	created = append(created, a.JobDir)
	if a.SandboxRoot {
		dir := filepath.Join(a.JobDir, sandboxRootDir)
		if err := fsx.MkdirExclusive(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		created = append(created, dir)
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{secretFile, a.SecretEnv, 0o600}, {batchFile, a.BatchScript, 0o700}} {
		path := filepath.Join(a.JobDir, f.name)
		if err := writeExclusive(path, f.data, f.mode, sync); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		created = append(created, path)
	}
	if sync {
		for _, dir := range []string{a.JobDir, jobsDir, controlDir} {
			if err := fsx.SyncDir(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureDir makes dir (0700) unless it is already a real directory; a
// symlink or a non-directory there is an error.
func ensureDir(dir string) (bool, error) {
	info, err := os.Lstat(dir)
	switch {
	case err == nil && info.IsDir():
		return false, nil
	case err == nil:
		return false, fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if err := fsx.MkdirExclusive(dir, 0o700); err != nil {
		return false, fmt.Errorf("create %s: %w", dir, err)
	}
	return true, nil
}
