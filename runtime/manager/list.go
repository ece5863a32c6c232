package manager

import (
	"crypto/sha256"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/schema"
)

// Bounds of ListHandles: a completion that reads more job dirs, or larger
// handles, than these is looking at something that is not a workspace.
const (
	listMaxJobDirs    = 4096
	listMaxHandleSize = 64 << 10
)

// ListHandles returns the persisted handles of the job dirs under
// workspace/.nvflare_slurm/jobs, sorted by job id, without opening the
// workspace as a runtime does (no ownership or mode checks, no scheduler,
// no lock): it is what shell completion offers for --job-id.
//
// The workspace path is resolved once (symlinks in it, such as a home
// directory on a parallel filesystem, are the user's); below it every
// directory and file is opened through internal/dirfd, so a symlink
// planted anywhere in the control area is never followed and a named pipe
// never blocks. It skips, without error, every entry that is not a
// directory named like a job key holding a regular, valid handle.json for
// that key. It opens at most 4096 job dirs and reads handles of at most
// 64 KiB. An error means the jobs dir itself cannot be opened or listed.
func ListHandles(root string) ([]HandleInfo, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	ws, err := dirfd.Open(real)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	jobs, err := ws.OpenBeneath(controlDir + "/" + jobsDirName)
	if err != nil {
		return nil, err
	}
	defer jobs.Close()
	names, err := jobs.Names()
	if err != nil {
		return nil, err
	}
	var handles []HandleInfo
	opened := 0
	for _, name := range names {
		if !isJobKey(name) {
			continue
		}
		if opened++; opened > listMaxJobDirs {
			break
		}
		h, err := readHandleBeneath(jobs, name)
		if err != nil || schema.JobKey(h.JobID) != name {
			continue
		}
		handles = append(handles, h)
	}
	slices.SortFunc(handles, func(a, b HandleInfo) int { return strings.Compare(a.JobID, b.JobID) })
	return handles, nil
}

// readHandleBeneath reads and checks the handle of the job dir key of
// jobs, following no symlink and opening no FIFO for longer than a check.
func readHandleBeneath(jobs *dirfd.Dir, key string) (HandleInfo, error) {
	dir, err := jobs.OpenDir(key)
	if err != nil {
		return HandleInfo{}, err
	}
	defer dir.Close()
	f, err := dir.OpenRegular(handleFile, dirfd.Expect{})
	if err != nil {
		return HandleInfo{}, err
	}
	defer f.Close()
	data, err := readAll(f, listMaxHandleSize)
	if err != nil {
		return HandleInfo{}, err
	}
	return parseHandle(f.Name(), data)
}

// isJobKey says whether name has the form of JobKey's result (64 lowercase
// hex digits), so that no other entry costs an open.
func isJobKey(name string) bool {
	return len(name) == 2*sha256.Size && strings.Trim(name, "0123456789abcdef") == ""
}
