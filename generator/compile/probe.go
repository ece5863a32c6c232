package compile

import (
	"fmt"
	"slices"
	"strings"
)

// probeDirectiveKeys are the sbatch directives a probe job may add to its
// plan (WithProbeWorker): begin holds a job in the queue so that it stays
// pending (flare-slurm check's pending probes).
var probeDirectiveKeys = []string{"begin"}

// WithProbeWorker returns a copy of the plan for one probe of flare-slurm
// check: the worker is the probe program script, run as
// "python_path -u script <worker args>" in place of "-m <module>", and
// extra directives (only probeDirectiveKeys) follow the job's own. Every
// other value — backend, setup, environment, secrets, mounts, resources
// and directives — stays the job's, so the probe runs where and how the
// NVFlare worker would.
func (p *Plan) WithProbeWorker(script string, extra ...Directive) (*Plan, error) {
	v := p.View()
	if len(v.WorkerArgv) < 4 || v.WorkerArgv[1] != "-u" || v.WorkerArgv[2] != "-m" {
		return nil, fmt.Errorf("compile: the worker argv %q is not python_path -u -m module …", v.WorkerArgv)
	}
	if !strings.HasPrefix(script, "/") {
		return nil, fmt.Errorf("compile: probe program %q is not an absolute path", script)
	}
	for _, d := range extra {
		if !slices.Contains(probeDirectiveKeys, d.Key) {
			return nil, fmt.Errorf("compile: probe directive %q is not one of %s", d.Key, strings.Join(probeDirectiveKeys, ", "))
		}
		if d.Value == "" || strings.ContainsAny(d.Value, " \t\r\n\x00") {
			return nil, fmt.Errorf("compile: probe directive %s=%q must be one word", d.Key, d.Value)
		}
		for _, have := range v.Directives {
			if have.Key == d.Key {
				return nil, fmt.Errorf("compile: probe directive %s is already set by the job", d.Key)
			}
		}
	}
	v.WorkerArgv = append([]string{v.WorkerArgv[0], "-u", script}, v.WorkerArgv[4:]...)
	v.WorkerModule = ""
	v.Directives = append(v.Directives, extra...)
	// The rest is shared: a Plan is never changed once resolved.
	q := *p
	q.view = v
	return &q, nil
}
