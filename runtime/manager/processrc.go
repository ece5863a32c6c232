package manager

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
)

// processRCFile is the file in a job's run dir (<workspace>/<job id>) where
// an NVFlare worker records its own return code (FLMetaKey.PROCESS_RC_FILE).
const processRCFile = "_process_rc.txt"

// maxProcessRC bounds what is read of processRCFile: one number.
const maxProcessRC = 64

// refineReturnCode refines the return code of a finished job from the
// worker's processRCFile, as NVFlare's parent does (fed_utils.get_return_code):
// an infrastructure failure (104) stands; otherwise the file's first line,
// an integer, replaces the launcher's code (a value outside 0..255, which
// no process exit status can be, counts as malformed). A missing file keeps the code;
// an unreadable or malformed one keeps it with a warning. The file is read
// through directory descriptors without following symlinks, and left in
// place (flare-slurm never deletes what it did not create).
func (m *Manager) refineReturnCode(jobID string, rc int) (int, string) {
	if rc == RCInfrastructure {
		return rc, ""
	}
	v, err := readProcessRC(m.cfg.Workspace, jobID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return rc, ""
	case err != nil:
		m.log.Warn("cannot read the worker's return code; keeping the launcher's", "job_id", jobID, "file", processRCFile, "err", err, "return_code", rc)
		return rc, ""
	}
	return v, fmt.Sprintf("return code %d from %s (the launcher's was %d)", v, processRCFile, rc)
}

func readProcessRC(workspace, jobID string) (int, error) {
	data, err := ReadRunFile(workspace, jobID, processRCFile, maxProcessRC+1)
	if err != nil {
		return 0, err
	}
	name := filepath.Join(workspace, jobID, processRCFile)
	if len(data) > maxProcessRC {
		return 0, fmt.Errorf("%s is longer than %d bytes", name, maxProcessRC)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	v, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || v < 0 || v > 255 {
		return 0, fmt.Errorf("%s: first line %q is not a return code (an integer 0..255)", name, line)
	}
	return v, nil
}

// ReadRunFile reads at most limit bytes of the regular file name in the
// run dir <workspace>/<jobID> of a job, through directory descriptors,
// without following a symlink or blocking on a FIFO (dirfd.OpenRegular).
func ReadRunFile(workspace, jobID, name string, limit int64) ([]byte, error) {
	ws, err := dirfd.Open(workspace)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	run, err := ws.OpenDir(jobID)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	f, err := run.OpenRegular(name, dirfd.Expect{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
