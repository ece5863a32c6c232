package compile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
)

// ErrStaleArtifacts is wrapped by WriteJobDir's error when the job dir
// already exists.
var ErrStaleArtifacts = errors.New("stale artifacts")

// WriteJobDir writes the artifacts into a.JobDir: the directory (0700),
// sandbox_root/ (0700, container sandboxes), secret.env (0600), batch.sh
// (0700) and, for a node group, node.sh (0700), each created exclusively and never through a symlink. Missing
// .nvflare_slurm/ and jobs/ directories are created (0700). With sync, every
// file and every directory entry this call made is fsynced. An existing job dir refuses the
// launch; on any failure everything this call created is removed.
func WriteJobDir(a *Artifacts, sync bool) error {
	return jobDirWriter{sync: sync, createFile: createExclusive, syncDir: fsx.SyncDir}.write(a)
}

// jobDirWriter is one WriteJobDir: sync; createFile, which creates each
// file of the job dir (createExclusive; a test makes it fail half-way
// through a write); and syncDir, which fsyncs a directory above the job
// dir (fsx.SyncDir; a test records which).
type jobDirWriter struct {
	sync       bool
	createFile func(dirfd int, name string, data []byte, perm uint32, sync bool) error
	syncDir    func(path string) error
}

func (w jobDirWriter) write(a *Artifacts) (err error) {
	if a == nil || a.JobDir == "" || !filepath.IsAbs(a.JobDir) {
		return errors.New("compile: WriteJobDir needs artifacts with an absolute job dir")
	}
	jobsDir := filepath.Dir(a.JobDir)
	controlDir := filepath.Dir(jobsDir)
	var created []string // in creation order; removed in reverse on failure
	jobsMade := false    // jobs/ is new: its entry in .nvflare_slurm/ must be made durable too
	defer func() {
		if err == nil {
			return
		}
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
	}()
	for _, dir := range []string{controlDir, jobsDir} {
		// Made (0700) unless it is already a real directory; a symlink or
		// a non-directory there is an error.
		info, err := os.Lstat(dir)
		switch {
		case err == nil && info.IsDir():
			continue
		case err == nil:
			return fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := fsx.MkdirExclusive(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		created = append(created, dir)
		jobsMade = dir == jobsDir
	}
	if err := unix.Mkdir(a.JobDir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w of job %s in %s: verify no allocation uses them before removal, then remove the directory to relaunch",
				ErrStaleArtifacts, a.JobID, a.JobDir)
		}
		return fmt.Errorf("create job directory %s: %w", a.JobDir, err)
	}
	created = append(created, a.JobDir)
	// Everything inside the job dir is created relative to a descriptor of
	// it: short lookups, and no path component can be swapped under us.
	dirfd, err := unix.Open(a.JobDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: a.JobDir, Err: err}
	}
	defer unix.Close(dirfd)
	if err := exactMode(dirfd, "", 0o700); err != nil {
		return &os.PathError{Op: "chmod", Path: a.JobDir, Err: err}
	}
	if a.SandboxRoot {
		path := filepath.Join(a.JobDir, sandboxRootDir)
		if err := unix.Mkdirat(dirfd, sandboxRootDir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		created = append(created, path)
		if err := exactMode(dirfd, sandboxRootDir, 0o700); err != nil {
			return &os.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	files := []ReviewFile{{secretFile, a.SecretEnv, 0o600}, {batchFile, a.BatchScript, 0o700}}
	if a.NodeScript != nil {
		files = append(files, ReviewFile{nodeFile, a.NodeScript, 0o700})
	}
	for _, f := range files {
		path := filepath.Join(a.JobDir, f.Name)
		if err := w.createFile(dirfd, f.Name, f.Data, uint32(f.Mode), w.sync); err != nil {
			return fmt.Errorf("write %s: %w", path, &os.PathError{Op: "create", Path: path, Err: err})
		}
		created = append(created, path)
	}
	if w.sync {
		if err := unix.Fsync(dirfd); err != nil {
			return fmt.Errorf("fsync directory %s: %w", a.JobDir, err)
		}
		// The new job dir's entry; .nvflare_slurm/ only when jobs/ is new
		// (an unchanged directory's fsync still costs a device flush).
		if err := w.syncDir(jobsDir); err != nil || !jobsMade {
			return err
		}
		return w.syncDir(controlDir)
	}
	return nil
}

// exactMode gives name in dirfd ("" for dirfd itself) exactly mode perm.
// Modes are created with perm, so this only changes something when the
// umask narrowed it; fstat is read-only, a chmod would dirty the inode.
func exactMode(dirfd int, name string, perm uint32) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH); err != nil || st.Mode&0o7777 == perm {
		return err
	}
	if name == "" {
		return unix.Fchmod(dirfd, perm)
	}
	return unix.Fchmodat(dirfd, name, perm, 0)
}

// createExclusive creates name in dirfd with O_CREAT|O_EXCL|O_NOFOLLOW and
// exactly mode perm, writes data and, with sync, fsyncs it. On failure
// after creation the file is removed.
func createExclusive(dirfd int, name string, data []byte, perm uint32, sync bool) (err error) {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	}
	if err != nil {
		return err
	}
	// os.File retries EINTR and short writes; its errors lose the name
	// (the caller names the path).
	f := os.NewFile(uintptr(fd), name)
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err = fsx.Pathless(err); err != nil {
			unix.Unlinkat(dirfd, name, 0)
		}
	}()
	if err := exactMode(fd, "", perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil || !sync {
		return err
	}
	return f.Sync()
}
