// Package compile turns one launch request (contract §12) and a prepared
// workspace into the artifacts of one Slurm batch job (contract §8): the
// batch script, the transient secret file and the sbatch argv. The same
// inputs always give byte-identical artifacts.
//
// The work is split in three steps with no hidden state between them:
// Resolve checks every rule and builds an immutable Plan of effective
// values; Plan.Compile renders the artifacts in memory; WriteJobDir writes
// them exclusively into the job directory.
package compile

import (
	"errors"
	"fmt"
	"github.com/flare-slurm/flare-slurm/schema"
	"io"
	"os"
)

// Worker modules per role (contract §8).
const (
	clientModule = "nvflare.private.fed.app.client.worker_process"
	serverModule = "nvflare.private.fed.app.server.runner_process"
)

// ParseAndResolve parses a launch request and resolves it against ws. It
// reports every independent problem of one run: the request's structural
// problems (syntax, unknown keys, types, job_args) and, whenever the
// fields the plan needs (job_id, site, role) are usable, the plan's
// problems too. Job argument names are checked against the workspace's
// role, so a wrong role is one problem, not one per argument. The request
// comes back when it parsed as a JSON object (for its job id).
func ParseAndResolve(ws *schema.Workspace, file string, data []byte, env Environ) (*Plan, *schema.LaunchRequest, error) {
	return parseAndResolve(ws, file, data, env, false)
}

// ParseAndResolveReview is ParseAndResolve for a dry run (render) that
// submits nothing: a run directory that does not exist yet and secret
// sources that are not set in this environment are not refused;
// Plan.Notes says they were not checked. Compile of such a plan fails;
// CompileRedacted redacts them.
func ParseAndResolveReview(ws *schema.Workspace, file string, data []byte, env Environ) (*Plan, *schema.LaunchRequest, error) {
	return parseAndResolve(ws, file, data, env, true)
}

func parseAndResolve(ws *schema.Workspace, file string, data []byte, env Environ, review bool) (*Plan, *schema.LaunchRequest, error) {
	if ws == nil {
		return nil, nil, errors.New("compile: ParseAndResolve needs a workspace")
	}
	req, ps := schema.ParseLaunchRequest(file, data, ws.Role)
	if req == nil || req.JobID == "" || req.Site == "" || req.Role == "" {
		return nil, req, req.Place(ps)
	}
	plan, rps := resolve(ws, req, env, review)
	if ps = append(ps, rps...); ps == nil {
		return plan, req, nil
	}
	return nil, req, req.Place(ps)
}

// ReadRequest reads a launch request from the file path, or from stdin
// when path is "-": at most schema.MaxInputBytes, like every input (a
// request is a few kilobytes; its reading costs at most 16 bytes of memory
// per byte, TestHostileRequestMemoryBounded).
func ReadRequest(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, schema.MaxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > schema.MaxInputBytes {
		return nil, fmt.Errorf("the request is larger than %d bytes", schema.MaxInputBytes)
	}
	return data, nil
}
