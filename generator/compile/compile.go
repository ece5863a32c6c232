package compile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
	"github.com/flare-slurm/flare-slurm/schema"
	"github.com/flare-slurm/flare-slurm/templates"

	"github.com/flare-slurm/flare-slurm/internal/problem"
)

// Artifacts are the rendered, not yet written, files and commands of one
// job (contract §8).
type Artifacts struct {
	JobID       string
	JobDir      string // <workspace>/.nvflare_slurm/jobs/<JobKey(job id)>
	JobName     string
	Comment     string
	BatchScript []byte // batch.sh, mode 0700; holds no secret value
	SecretEnv   []byte // secret.env, mode 0600; the only place secret values go
	// NodeScript is node.sh (mode 0700) of a launcher-owned node group;
	// nil for every other job. It holds no secret value.
	NodeScript []byte
	// SandboxRoot says whether the job dir gets an empty sandbox_root/
	// (container sandboxes bind it over the workspace).
	SandboxRoot bool
	// Argv is the sbatch command; Argv[0] is the literal "sbatch", which the
	// runtime replaces with the resolved sbatch path.
	Argv []string
	// SchedulerEnv is the environment sbatch runs with: this process's
	// environment (os.Environ) scrubbed by Plan.SchedulerEnv. A caller with
	// another base environment calls Plan.SchedulerEnv itself.
	SchedulerEnv []string
}

// systemPath is the PATH the apptainer backend resets to before setup.
const systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// apptainerExecOptions are the options of every `apptainer exec` the
// scripts run, one option (with its value) per entry, before the binds:
// the one source of the templates (via batchData.ApptainerOptions) and of
// the tests that expect the container's argv.
var apptainerExecOptions = [][]string{{"--userns"}, {"--containall"}, {"--no-eval"}, {"--no-privs"}, {"--no-mount", "bind-paths,hostfs"}}

// gpuEnv are the device-selection variables mirrored into apptainer.
var gpuEnv = []string{"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"}

// batchData is what templates/batch.sh.tmpl and node.sh.tmpl render. It copies the plan
// values it needs instead of embedding PlanView: text/template finds a
// promoted field by a slow breadth-first search at every use.
type batchData struct {
	Sandbox    string
	Setup      string
	PythonEnv  string
	Env        []EnvVar
	ForwardEnv []string
	WorkerArgv []string
	Tools      Tools
	RunDir     string
	// ApptainerOptions are the options of apptainer exec, then one
	// --bind src:dst:mode per mount, each entry shell-quoted: the
	// templates print one per line.
	ApptainerOptions []string
	SecretPath       string
	SystemPath       string
	Image            string
	GPU              bool
	ContainerNames   []string // study env and secret names, sorted
	PyxisNames       []string // PYTHONPATH, child marker, env and secret names, sorted
	PyxisMounts      string
	GPUEnv           []string
	// Node groups only (NodeScript "" otherwise).
	NodeScript     string // <job dir>/node.sh
	Nodes          int
	PortStart      int
	PortWidth      int
	NodeGroupNames []string // nodeGroupEnv
	Command        []string // additional_node_command, split into words
	AppDir         string
	DropNames      []string // credential and study secret names, sorted
	Bootstrap      []EnvVar // nodeGroupBootstrap
}

// nodeGroupEnv are the rendezvous variables batch.sh exports for a node
// group (node.sh adds NVFL_NODE_RANK); containers get them by name.
var nodeGroupEnv = []string{"NVFL_NNODES", "NVFL_MASTER_ADDR", "NVFL_MASTER_PORT", "NVFL_RUN_ID"}

// nodeGroupBootstrap are the variables node.sh gives every node but the
// first, as NVFlare's launcher does: the Client API bootstrap a
// launch-once training script on those nodes reads.
var nodeGroupBootstrap = []EnvVar{{"CLIENT_API_TYPE", "CELL_API"}, {"NVFLARE_CLIENT_API_BOOTSTRAP", "client_api_bootstrap_1.json"}}

type secretLine struct{ Name, Value string }

// redacted replaces every secret value in a rendered secret.env for review.
const redacted = "<redacted>"

// Compile renders the artifacts of the plan. Secret values are read here,
// from env (study secret_env sources) and from the request's credentials,
// and go into SecretEnv only.
func (p *Plan) Compile(env Environ) (*Artifacts, error) { return p.compile(env, false) }

// CompileRedacted renders the artifacts with every secret value replaced by
// Redacted; it still requires every secret source to be set, exactly as a
// launch would, unless the plan is a review plan (ParseAndResolveReview), whose
// unset sources are redacted like the rest.
func (p *Plan) CompileRedacted(env Environ) (*Artifacts, error) {
	if p.review {
		env = func(string) (string, bool) { return redacted, true }
	}
	return p.compile(env, true)
}

// secretValues are the lines of secret.env, every value redacted with
// redact.
func (p *Plan) secretValues(env Environ, redact bool) ([]secretLine, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	var out []secretLine
	var ps schema.Problems
	for _, s := range p.studySecrets {
		value, ok := env(s.Source)
		if !ok {
			ps = append(ps, p.studyRT.At(schema.Problem{Kind: problem.Rule, File: p.secretEnvFile, Path: "studies." + p.view.Study + ".secret_env." + s.Name + ".source",
				Message: fmt.Sprintf("parent environment variable %s is not set", s.Source), Hint: "export it in the parent's environment before it starts"}))
			continue
		}
		out = append(out, secretLine{Name: s.Name, Value: value})
	}
	if ps != nil {
		return nil, ps
	}
	for _, c := range p.credentials {
		out = append(out, secretLine{Name: c.name, Value: c.value})
	}
	if redact {
		for i := range out {
			out[i].Value = redacted
		}
	}
	slices.SortFunc(out, func(a, b secretLine) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (p *Plan) compile(env Environ, redact bool) (*Artifacts, error) {
	secrets, err := p.secretValues(env, redact)
	if err != nil {
		return nil, err
	}
	v := p.view
	d := batchData{
		Sandbox:    v.Sandbox,
		PythonEnv:  v.PythonEnv,
		Env:        v.Env,
		ForwardEnv: v.ForwardEnv,
		WorkerArgv: v.WorkerArgv,
		Tools:      v.Tools,
		RunDir:     v.RunDir,
		SecretPath: filepath.Join(v.JobDir, secretFile),
		SystemPath: systemPath,
		GPUEnv:     gpuEnv,
	}
	if v.Image != nil {
		d.Image = *v.Image
	}
	d.GPU = v.Resources.GPUsPerNode != nil && *v.Resources.GPUsPerNode > 0
	for _, e := range v.Env {
		d.ContainerNames = append(d.ContainerNames, e.Name)
	}
	for _, s := range v.SecretEnv {
		d.ContainerNames = append(d.ContainerNames, s.Name)
	}
	slices.Sort(d.ContainerNames)
	d.PyxisNames = append([]string{ChildProcessEnv, "PYTHONPATH"}, d.ContainerNames...)
	if v.NodeGroup != nil {
		d.PyxisNames = append(d.PyxisNames, nodeGroupEnv...)
	}
	slices.Sort(d.PyxisNames)
	mounts := make([]string, len(v.Mounts))
	d.ApptainerOptions = make([]string, 0, len(apptainerExecOptions)+len(v.Mounts))
	for _, o := range apptainerExecOptions {
		d.ApptainerOptions = append(d.ApptainerOptions, shell.Join(o))
	}
	for i, m := range v.Mounts {
		spec := m.Source + ":" + m.Destination + ":" + m.Mode
		d.ApptainerOptions = append(d.ApptainerOptions, shell.Join([]string{"--bind", spec}))
		mounts[i] = strings.TrimSuffix(spec, ":rw") // pyxis: rw is the default
	}
	d.PyxisMounts = strings.Join(mounts, ",")
	// The template ends the setup text with exactly one newline.
	d.Setup = strings.TrimSuffix(v.Setup, "\n")

	var nodeScript []byte
	if ng := v.NodeGroup; ng != nil {
		d.NodeScript = filepath.Join(v.JobDir, nodeFile)
		d.Nodes = v.Resources.Nodes
		d.PortStart, d.PortWidth = ng.PortStart, ng.PortEnd-ng.PortStart+1
		d.NodeGroupNames, d.Command, d.AppDir = nodeGroupEnv, ng.Command, v.AppDir
		d.DropNames, d.Bootstrap = p.secretNamesAll(), nodeGroupBootstrap
		if nodeScript, err = templates.Render("node.sh.tmpl", d); err != nil {
			return nil, err
		}
	}
	script, err := templates.Render("batch.sh.tmpl", d)
	if err != nil {
		return nil, err
	}
	secretEnv, err := templates.Render("secret.env.tmpl", struct{ Secrets []secretLine }{secrets})
	if err != nil {
		return nil, err
	}
	return &Artifacts{
		JobID:        v.JobID,
		JobDir:       v.JobDir,
		JobName:      v.JobName,
		Comment:      v.Comment,
		BatchScript:  script,
		SecretEnv:    secretEnv,
		NodeScript:   nodeScript,
		SandboxRoot:  v.Sandbox != schema.SandboxNone,
		Argv:         p.sbatchArgv(),
		SchedulerEnv: p.SchedulerEnv(os.Environ()),
	}, nil
}

// secretNamesAll lists every name secret.env can hold for this plan, sorted:
// the study's secret_env names and all credential names, present or not.
// The nodes of a node group other than the first unset them.
func (p *Plan) secretNamesAll() []string {
	names := make([]string, 0, len(p.studySecrets)+len(schema.CredentialJobArgs))
	for _, s := range p.studySecrets {
		names = append(names, s.Name)
	}
	for _, c := range schema.CredentialJobArgs {
		names = append(names, c.Env)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// sbatchArgv is the sbatch command of contract §8, argv[0] "sbatch".
func (p *Plan) sbatchArgv() []string {
	v := p.view
	res := v.Resources
	n := strconv.Itoa(res.Nodes)
	argv := []string{"sbatch", "--parsable", "--no-requeue", "--export=NIL", "--chdir=" + v.RunDir,
		"--nodes=" + n, "--ntasks=" + n, "--ntasks-per-node=1"}
	if res.GPUsPerNode != nil && *res.GPUsPerNode > 0 {
		argv = append(argv, "--gres=gpu:"+strconv.Itoa(*res.GPUsPerNode))
	}
	if res.CPUsPerNode != nil {
		argv = append(argv, "--cpus-per-task="+strconv.Itoa(*res.CPUsPerNode))
	}
	if res.MemPerNodeMiB != nil {
		argv = append(argv, "--mem="+strconv.Itoa(*res.MemPerNodeMiB)+"M")
	}
	if v.TimeLimitSignal != "" {
		argv = append(argv, "--signal="+v.TimeLimitSignal)
	}
	for _, d := range v.Directives {
		argv = append(argv, "--"+d.Key+"="+d.Value)
	}
	return append(argv, "--job-name="+v.JobName, "--comment="+v.Comment,
		"--output="+schema.SlurmFilename(v.RunDir)+"/"+schema.SlurmOutputPattern, filepath.Join(v.JobDir, batchFile))
}

// SchedulerEnv is slurmenv.Scrub (base without the variables that would
// change what the Slurm commands do, contract §8, and with LC_ALL=C) that also drops every study secret_env
// name and source of the workspace (the job's and the other studies') and
// the bootstrap credential names, so no secret value reaches the
// scheduler's environment.
func (p *Plan) SchedulerEnv(base []string) []string {
	drop := slices.Clone(p.workspaceSecrets)
	for _, s := range p.studySecrets {
		drop = append(drop, s.Source, s.Name)
	}
	for _, c := range schema.CredentialJobArgs {
		drop = append(drop, c.Env)
	}
	return slurmenv.Scrub(base, drop...)
}
