package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// Job identity (contract §8): where a job's files live in the workspace
// and how its Slurm job is named and marked. The compiler writes these,
// the runtime finds jobs by them.

// JobsDir is the directory of job directories inside ControlDir.
const JobsDir = "jobs"

// Files of a job directory: what the compiler writes (contract §8) and
// what the runtime keeps there.
const (
	BatchScriptFile = "batch.sh"    // the sbatch script
	SecretEnvFile   = "secret.env"  // the job's secrets, mode 0600, read by batch.sh
	NodeScriptFile  = "node.sh"     // a node group's per-node script (contract §11)
	HandleFile      = "handle.json" // the persisted handle of the submitted job
	TimersFile      = "timers.json" // the runtime's deadlines of the job
)

// CommentMarkerPrefix starts the Slurm comment of every job flare-slurm
// submits; the NVFlare job id follows it.
const CommentMarkerPrefix = "nvfl:"

// jobNamePrefix starts every Slurm job name; jobNameSiteChars is how many
// characters of the site name it keeps.
const (
	jobNamePrefix    = "nvfl-"
	jobNameSiteChars = 32
)

// JobKey is the job directory name of an NVFlare job id: the hex SHA-256
// of the id.
func JobKey(jobID string) string {
	sum := sha256.Sum256([]byte(jobID))
	return hex.EncodeToString(sum[:])
}

// JobDir is the directory of a job's files in the workspace at root.
func JobDir(root, jobID string) string {
	return filepath.Join(root, ControlDir, JobsDir, JobKey(jobID))
}

// JobName is the Slurm job name of a job of site: "nvfl-", the first 32
// characters of the site name, "-", the first 8 characters of the job key.
func JobName(site, jobID string) string {
	return jobNamePrefix + firstRunes(site, jobNameSiteChars) + "-" + JobKey(jobID)[:8]
}

// workspaceIDChars is how many hex digits of the workspace identity a
// marker carries.
const workspaceIDChars = 12

// WorkspaceID is the identity of the workspace at root (its canonical
// path) in a job's marker: the first 12 hex digits of its SHA-256.
func WorkspaceID(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:])[:workspaceIDChars]
}

// CommentMarker is the Slurm comment of the job jobID of the workspace at
// root: "nvfl:<job id>@<workspace id>". NVFlare's own launcher writes
// "nvfl:<job id>"; the workspace's identity is added because workspaces of
// one account share job names and ids, so that a handle copied into
// another workspace (a copy of the workspace, a test one beside the real
// one) never matches, watches or cancels the original's job (job ids hold
// no '@').
func CommentMarker(root, jobID string) string {
	return CommentMarkerPrefix + jobID + "@" + WorkspaceID(root)
}

// ExpectedMarker is the marker the runtime of the workspace at root
// matches for a job whose handle recorded marker: this workspace's marker
// of the job, whatever the handle says (a handle copied from another
// workspace names that workspace's marker), or the legacy marker of a job
// launched before markers carried the workspace.
func ExpectedMarker(root, jobID, recorded string) string {
	if recorded == CommentMarkerPrefix+jobID { // the legacy marker, NVFlare's form
		return recorded
	}
	return CommentMarker(root, jobID)
}

// JobIDOfComment is the job id a Slurm comment marks, and the workspace
// id it names ("" for a legacy marker), if it is a marker.
func JobIDOfComment(comment string) (jobID, workspaceID string, ok bool) {
	rest, ok := strings.CutPrefix(comment, CommentMarkerPrefix)
	if !ok {
		return "", "", false
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		return rest[:i], rest[i+1:], true
	}
	return rest, "", true
}

// firstRunes is the first n characters of s.
func firstRunes(s string, n int) string {
	for pos := range s {
		if n == 0 {
			return s[:pos]
		}
		n--
	}
	return s
}

// SlurmOutputPattern is the file name, in the job's run directory, that
// sbatch --output gives every job's standard output and error (%j is the
// Slurm job id); SlurmOutputName is it for one Slurm job.
const SlurmOutputPattern = "slurm-%j.out"

// SlurmOutputName is SlurmOutputPattern for Slurm job slurmJobID.
func SlurmOutputName(slurmJobID string) string { return "slurm-" + slurmJobID + ".out" }
