package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/account"
	"github.com/flare-slurm/flare-slurm/runtime/scheduler"
)

// ValidateWorkspace checks the runtime workspace (contract §9): a canonical
// real directory owned by uid with no group or world permission bits, with
// real startup/ and local/ directories.
func ValidateWorkspace(root string, uid int) error {
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return fmt.Errorf("workspace %s must be an absolute, normalised path", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("workspace %s: %v", root, err)
	}
	if real != root {
		return fmt.Errorf("workspace %s is reached through a symlink (its real path is %s); use the real path", root, real)
	}
	st, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("workspace %s: %v", root, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("workspace %s is not a directory", root)
	}
	if err := checkOwnerMode(root, st, uid); err != nil {
		return err
	}
	for _, sub := range []string{"startup", "local"} {
		p := filepath.Join(root, sub)
		st, err := os.Lstat(p)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("workspace %s: %s must be a real directory (not a symlink); prepare the workspace again", root, p)
		}
	}
	return nil
}

// CheckWorkspaceAccess checks the owner and mode of the workspace
// directory root (contract §9: owned by uid, no group or world bits)
// before anything in it is read, so that a workspace prepared by another
// account is reported as such rather than as an unreadable file. A root
// that does not exist passes: the loader reports it.
func CheckWorkspaceAccess(root string, uid int) error {
	st, err := os.Stat(root)
	if errors.Is(err, fs.ErrPermission) {
		return withHint(fmt.Errorf("workspace %s cannot be reached by the runtime account uid %s: %v", root, describeUID(uid), err),
			"a directory above the workspace is not searchable by the runtime account: run as the workspace's owner or fix the parent directories' modes")
	}
	if err != nil || !st.IsDir() {
		return nil
	}
	return checkOwnerMode(root, st, uid)
}

func checkOwnerMode(root string, st os.FileInfo, uid int) error {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid {
		return withHint(fmt.Errorf("workspace %s is owned by uid %s, not by the runtime account uid %s", root, describeUID(int(sys.Uid)), describeUID(uid)),
			fmt.Sprintf("run the runtime as the workspace's owner, give it to the runtime account (chown -R %d %s, as root), or prepare the workspace as the runtime account", uid, root))
	}
	if st.Mode().Perm()&0o077 != 0 {
		return withHint(fmt.Errorf("workspace %s has mode %04o: it must be private to the runtime account (chmod 700)", root, st.Mode().Perm()),
			fmt.Sprintf("chmod 700 %s (as its owner)", root))
	}
	return nil
}

// describeUID is "0 (root)", or the bare number when it has no account name.
func describeUID(uid int) string {
	if name, err := account.Name(context.Background(), uid, os.Getenv("PATH")); err == nil {
		return fmt.Sprintf("%d (%s)", uid, name)
	}
	return strconv.Itoa(uid)
}

// CheckScheduler is the once-per-parent scheduler check: the Slurm release
// must be at least scheduler.MinVersion and accounting must answer (three
// tries, half a second apart).
func CheckScheduler(ctx context.Context, c *scheduler.Client, sleep func(context.Context, time.Duration) error) (scheduler.Version, error) {
	if sleep == nil {
		sleep = sleepCtx
	}
	v, err := c.Version(ctx)
	if err != nil {
		return v, fmt.Errorf("check the Slurm version: %w", err)
	}
	if err := scheduler.CheckVersion(v); err != nil {
		return v, err
	}
	for try := 1; ; try++ {
		err = c.ProbeAccounting(ctx, c.Timeouts.Query)
		if err == nil {
			return v, nil
		}
		if try == 3 {
			return v, fmt.Errorf("slurm accounting (slurmdbd) is required and did not answer 3 probes: %w", err)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return v, err
		}
	}
}
