package compile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/flare-slurm/flare-slurm/schema"
)

// Plan is the resolved launch plan of one job: every effective value the
// artifacts are rendered from. It is immutable: resolve builds it, nothing
// changes it afterwards, and its accessors return copies. It holds no
// secret value except the bootstrap credentials of the request, which only
// Compile reads (into secret.env) and which View and plan.json never show.
type Plan struct {
	view         PlanView
	studySecrets []SecretRef // study secret_env: worker name ← parent variable
	// workspaceSecrets are the secret_env names and sources of every study
	// of the workspace, not only the job's: none may reach the scheduler.
	workspaceSecrets []string
	credentials      []credential
	secretEnvFile    string               // the study runtime file, for error messages
	studyRT          *schema.StudyRuntime // the same file loaded, for the positions of its values
	review           bool                 // made by ParseAndResolveReview
	reviewNotes      []string             // what a review (ParseAndResolveReview) did not check
}

type credential struct{ name, value string }

// PlanView is the reviewable form of a Plan, written as plan.json. Field
// order is the JSON key order. It never holds a secret value.
type PlanView struct {
	JobID     string `json:"job_id"`
	JobKey    string `json:"job_key"`
	Site      string `json:"site"`
	Role      string `json:"role"`
	Workspace string `json:"workspace"`
	RunDir    string `json:"run_dir"`
	AppDir    string `json:"app_dir"`
	JobDir    string `json:"job_dir"`
	JobName   string `json:"job_name"`
	Comment   string `json:"comment"`
	// Study is the job's study name ("" for none); StudyConfigured says
	// whether study_runtime.yaml has an entry for it.
	Study           string      `json:"study"`
	StudyConfigured bool        `json:"study_configured"`
	Sandbox         string      `json:"sandbox"`
	Image           *string     `json:"image"`
	PythonPath      string      `json:"python_path"`
	PythonEnv       string      `json:"pythonpath"`
	Setup           string      `json:"setup"`
	Directives      []Directive `json:"directives"`
	// TimeLimitSignal is sbatch's --signal value (B:USR1@120) when the
	// site asks for a warning before the time limit, else "".
	TimeLimitSignal string      `json:"time_limit_signal,omitempty"`
	Resources       Resources   `json:"resources"`
	Env             []EnvVar    `json:"env"`
	SecretEnv       []SecretRef `json:"secret_env"`
	ForwardEnv      []string    `json:"forward_env"`
	Mounts          []Mount     `json:"mounts"`
	ParentURL       string      `json:"parent_url"`
	WorkerModule    string      `json:"worker_module"`
	// WorkerArgv is the full worker command: python_path -u -m module args….
	WorkerArgv []string `json:"worker_argv"`
	Tools      Tools    `json:"tools"`
	// NodeGroup is set for a launcher-owned node group (contract §11).
	NodeGroup *NodeGroup `json:"node_group,omitempty"`
}

// NodeGroup is a launcher-owned node group: node rank 0 runs the worker,
// every other node runs Command (already split into words) in the app dir.
// NVFL_MASTER_PORT is PortStart + Slurm job id mod (PortEnd-PortStart+1).
type NodeGroup struct {
	Command   []string `json:"additional_node_command"`
	PortStart int      `json:"master_port_start"`
	PortEnd   int      `json:"master_port_end"`
}

// Directive is one effective sbatch directive.
type Directive struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Resources are the effective per-job resources (contract §7).
type Resources struct {
	Nodes          int     `json:"nodes"`
	GPUsPerNode    *int    `json:"gpus_per_node"`
	CPUsPerNode    *int    `json:"cpus_per_node"`
	MemPerNodeMiB  *int    `json:"mem_per_node_mib"`
	PendingTimeout float64 `json:"pending_timeout"`
}

// EnvVar is one study env value exported to the worker.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SecretRef names one secret.env entry and where its value comes from
// ("env:NAME" for a parent variable, "request:job_args.X" for a bootstrap
// credential). The value itself is never part of a plan view.
type SecretRef struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Mount is one container bind mount; Mode is "ro" or "rw".
type Mount struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Mode        string `json:"mode"`
}

// Tools are the compute-node commands the script runs: the configured path
// or the bare name (resolved on the compute node's PATH).
type Tools struct {
	Apptainer string `json:"apptainer"`
	Srun      string `json:"srun"`
}

// View returns a deep copy of the plan's reviewable values.
func (p *Plan) View() PlanView {
	v := p.view
	v.Image = clone(v.Image)
	v.Directives = slices.Clone(v.Directives)
	v.Resources.GPUsPerNode = clone(v.Resources.GPUsPerNode)
	v.Resources.CPUsPerNode = clone(v.Resources.CPUsPerNode)
	v.Resources.MemPerNodeMiB = clone(v.Resources.MemPerNodeMiB)
	v.Env = slices.Clone(v.Env)
	v.SecretEnv = slices.Clone(v.SecretEnv)
	v.ForwardEnv = slices.Clone(v.ForwardEnv)
	v.Mounts = slices.Clone(v.Mounts)
	v.WorkerArgv = slices.Clone(v.WorkerArgv)
	if v.NodeGroup = clone(v.NodeGroup); v.NodeGroup != nil {
		v.NodeGroup.Command = slices.Clone(v.NodeGroup.Command)
	}
	return v
}

// clone is a pointer to a copy of *p, or nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return new(*p)
}

// marshalJSON renders plan.json and sbatch.argv.json: 2-space indented,
// keys in a fixed order, a trailing newline, no HTML escaping.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Accessors the runtime uses.

// Notes are remarks about a valid plan that the operator should see: a
// job whose study has no entry in local/study_runtime.yaml runs with the
// site settings (the contract allows it, but it is easy to miss); and, for
// a review plan, each check ParseAndResolveReview did not run.
func (p *Plan) Notes() []string {
	var notes []string
	if p.view.Study != "" && !p.view.StudyConfigured {
		notes = append(notes, fmt.Sprintf("study %q has no entry in local/%s; the job runs with the site settings", p.view.Study, schema.StudyRuntimeFile))
	}
	return append(notes, p.reviewNotes...)
}

func (p *Plan) Sandbox() string         { return p.view.Sandbox }
func (p *Plan) PendingTimeout() float64 { return p.view.Resources.PendingTimeout }
