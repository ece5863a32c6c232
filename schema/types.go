package schema

// The typed, validated forms of every input flare-slurm reads. Loaders in
// this package return these values only when the input has no problem, so
// the generator and the runtime never re-check what is settled here.

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/flare-slurm/flare-slurm/internal/ojson"
)

// Directive is one sbatch directive, in the order the YAML lists it.
// Integer values are kept in their decimal string form.
type Directive struct {
	Key   string
	Value string
}

// Executables are the explicit command paths of job_launcher.executables.
// An empty string means unset (resolved from PATH at run time).
type Executables struct {
	Sbatch    string `yaml:"sbatch"`
	Squeue    string `yaml:"squeue"`
	Sacct     string `yaml:"sacct"`
	Scancel   string `yaml:"scancel"`
	Apptainer string `yaml:"apptainer"`
	Srun      string `yaml:"srun"`
}

// PortRange is an inclusive TCP port range.
type PortRange struct{ Start, End int }

// Sandboxes: the execution environments of a worker (job_launcher.sandbox).
const (
	SandboxApptainer = "apptainer" // a SIF image run with apptainer exec
	SandboxPyxis     = "pyxis"     // srun --container-image
	SandboxNone      = "none"      // directly on the compute node
)

// JobLauncher is slurm.yaml's job_launcher block with defaults applied
// (contract §3). It is also what the slurm_launcher args of a prepared
// workspace's resources.json.default decode to.
type JobLauncher struct {
	Sandbox                    string      `yaml:"sandbox"` // "apptainer", "pyxis" or "none"
	Image                      string      `yaml:"image"`   // absolute; "" in bare mode. After prepare: the image's real path
	PythonPath                 string      `yaml:"python_path"`
	ParentHost                 string      `yaml:"parent_host"` // "" when unset
	Directives                 []Directive `yaml:"-"`           // in file order: decodeDirectives
	Setup                      string      `yaml:"setup"`
	ForwardEnv                 []string    `yaml:"forward_env"`
	Executables                Executables `yaml:"executables"`
	InternalPort               int         `yaml:"internal_port"`                // default 8102
	InternalConnectionSecurity string      `yaml:"internal_connection_security"` // "mtls" (default) or "clear"
	SubmitTimeout              float64     `yaml:"submit_timeout"`
	QueryTimeout               float64     `yaml:"query_timeout"`
	CancelTimeout              float64     `yaml:"cancel_timeout"`
	PollInterval               float64     `yaml:"poll_interval"`
	PendingTimeout             float64     `yaml:"pending_timeout"`
	// MultiNodePortRange is the effective range; MultiNodePortRangeSet says
	// whether the config set it (only then does prepare write it).
	MultiNodePortRange    PortRange `yaml:"-"`
	MultiNodePortRangeSet bool      `yaml:"-"`
	// TimeLimitSignal is the opt-in warning before the time limit (nil
	// when unset): flare-slurm's runtime only.
	TimeLimitSignal *TimeLimitSignal `yaml:"time_limit_signal"`
}

// launcherKey is one job_launcher key of jl and how a prepared
// workspace's launcher args write it (nil: not written).
type launcherKey struct {
	key    string
	encode func() *ojson.Value
}

// launcherKeys are the job_launcher keys of jl, in the order
// LauncherArgs.Encode writes them. A new key is a field of JobLauncher
// with its yaml tag (decodeJobLauncher reads it), a row here and its
// schema.
func launcherKeys(jl *JobLauncher) []launcherKey {
	keys := []launcherKey{
		textKey("sandbox", &jl.Sandbox, false),
		textKey("python_path", &jl.PythonPath, false),
		{"executables", func() *ojson.Value { // in the schema's order
			e := &jl.Executables
			return ojson.NewObject().Set("sbatch", ojson.StringOrNull(e.Sbatch)).Set("squeue", ojson.StringOrNull(e.Squeue)).
				Set("sacct", ojson.StringOrNull(e.Sacct)).Set("scancel", ojson.StringOrNull(e.Scancel)).
				Set("apptainer", ojson.StringOrNull(e.Apptainer)).Set("srun", ojson.StringOrNull(e.Srun))
		}},
		textKey("image", &jl.Image, true),
		{"internal_port", func() *ojson.Value { return ojson.IntValue(int64(jl.InternalPort)) }},
		{"sbatch_directives", func() *ojson.Value {
			directives := ojson.NewObject()
			for _, d := range jl.Directives {
				directives.Set(d.Key, ojson.StringValue(d.Value))
			}
			return directives
		}},
		textKey("setup", &jl.Setup, false),
		{"forward_env", func() *ojson.Value { return ojson.StringArray(jl.ForwardEnv) }},
		textKey("parent_host", &jl.ParentHost, true),
	}
	for _, t := range timeouts(jl) {
		keys = append(keys, launcherKey{t.key, func() *ojson.Value { return ojson.FloatValue(*t.field) }})
	}
	return append(keys, launcherKey{multiNodePortRangeKey, func() *ojson.Value {
		if !jl.MultiNodePortRangeSet {
			return nil
		}
		r := ojson.NewArray()
		r.Items = append(r.Items, ojson.IntValue(int64(jl.MultiNodePortRange.Start)), ojson.IntValue(int64(jl.MultiNodePortRange.End)))
		return r
	}}, launcherKey{TimeLimitSignalKey, func() *ojson.Value {
		if t := jl.TimeLimitSignal; t != nil {
			return ojson.NewObject().Set("signal", ojson.StringValue(t.Signal)).Set("seconds_before", ojson.IntValue(int64(t.SecondsBefore)))
		}
		return nil
	}})
}

// textKey is a string key; null says an unset value is written as null
// (else as "").
func textKey(key string, field *string, null bool) launcherKey {
	return launcherKey{key, func() *ojson.Value {
		if null {
			return ojson.StringOrNull(*field)
		}
		return ojson.StringValue(*field)
	}}
}

// TimeLimitSignal asks Slurm to send Signal to the worker SecondsBefore
// seconds before the job's time limit (sbatch --signal=B:SIG@SECONDS).
// The schema's enum allows the signals that the batch shell (the worker,
// by exec), Apptainer and srun (pyxis, node groups) all pass on to the
// worker.
type TimeLimitSignal struct {
	Signal        string `yaml:"signal"`         // USR1, USR2, TERM, INT, HUP or QUIT
	SecondsBefore int    `yaml:"seconds_before"` // 1..65535
}

// TimeLimitSignalKey is the job_launcher key (and launcher argument) of
// the time-limit warning.
const TimeLimitSignalKey = "time_limit_signal"

// Parent is slurm.yaml's optional client-only parent block.
type Parent struct {
	Directives       []Directive `yaml:"-"` // in file order: decodeDirectives
	EnvironmentSetup string      `yaml:"environment_setup"`
}

// SlurmConfig is a validated slurm.yaml.
type SlurmConfig struct {
	File        string // the path it was read from
	JobLauncher JobLauncher
	Parent      *Parent // nil when absent

	// parentLine and parentColumn locate the parent key, for problems
	// found later (CheckConfigForKit).
	parentLine, parentColumn int
}

// StudyRuntime is a validated local/study_runtime.yaml (format 2).
type StudyRuntime struct {
	File    string
	Studies []Study // in file order
	// root is the file's YAML tree, where At finds the line and column
	// of a value by its dotted path, for the problems a launch request
	// meets in the file after it loaded.
	root *yaml.Node
}

// At gives p (a problem in this file) the line and column of the value at
// p.Path or, when there is none (a key that is missing), of the nearest
// value that encloses it.
func (s *StudyRuntime) At(p Problem) Problem {
	if s == nil || p.Line > 0 {
		return p
	}
	for path := p.Path; path != ""; path = path[:max(strings.LastIndexByte(path, '.'), 0)] {
		if n := nodeAt(s.root, path); n != nil {
			p.Line, p.Column = n.Line, n.Column
			return p
		}
	}
	return p
}

// Study returns the named study, or nil when the file has no entry for it.
func (s *StudyRuntime) Study(name string) *Study {
	if s == nil {
		return nil
	}
	if i := slices.IndexFunc(s.Studies, func(st Study) bool { return st.Name == name }); i >= 0 {
		return &s.Studies[i]
	}
	return nil
}

// Study is one entry of studies.
type Study struct {
	Name         string
	Image        string // container.image; "" when unset
	Datasets     []Dataset
	Env          []EnvVar // in file order; booleans already "true"/"false"
	SecretEnv    []SecretEnv
	SecretMounts []SecretMount
	Slurm        *StudySlurm // nil when absent
}

// Dataset is one datasets.<name> entry; it mounts at /data/<study>/<name>.
type Dataset struct {
	Name   string `yaml:"-"`
	Type   string `yaml:"-"` // always "mount" once validated
	Source string `yaml:"source"`
	Mode   string `yaml:"mode"` // "ro" or "rw"
}

// EnvVar is one study env entry.
type EnvVar struct {
	Name  string
	Value string
}

// SecretEnv is one secret_env entry: the worker's Name gets the value of the
// parent's environment variable Source.
type SecretEnv struct {
	Name   string `yaml:"-"`
	Source string `yaml:"source"`
	Key    string `yaml:"key"` // optional; "" when unset
}

// SecretMount is one secret_mounts entry (always read-only under Slurm).
type SecretMount struct {
	Name      string `yaml:"-"`
	Source    string `yaml:"source"`
	MountPath string `yaml:"mount_path"`
	Mode      string `yaml:"-"` // "ro"
}

// StudySlurm is a study's slurm block. Empty strings mean "not overridden",
// except Setup, where nil means not overridden and "" clears the site setup.
type StudySlurm struct {
	Sandbox    string  `yaml:"sandbox"`
	PythonPath string  `yaml:"python_path"`
	Setup      *string `yaml:"setup"`
	// The directives are integers or strings: scalarText, not a decode.
	Partition string `yaml:"-"`
	Account   string `yaml:"-"`
	QOS       string `yaml:"-"`
}

// JobMeta is the Slurm reading of a job's meta.json for one site.
type JobMeta struct {
	Study     string // "" when the job names none
	Slurm     JobSlurm
	Resources ResourceSpec
	// SlurmPaths names, for each key set in Slurm, the dotted path of the
	// value used (e.g. "launcher_spec.default.slurm.time").
	SlurmPaths map[string]string
}

// JobSlurm is the job-owned Slurm spec of a site (contract §7):
// launcher_spec.default.slurm shallow-merged under
// launcher_spec.<site>.slurm (site wins), else the legacy nested
// resource_spec.<site>.slurm. Nil pointers and "" mean unset.
type JobSlurm struct {
	Image          string   `yaml:"image"`
	Nodes          int      `yaml:"nodes"` // 1 when unset
	GPUsPerNode    *int     `yaml:"gpus_per_node"`
	CPUsPerNode    *int     `yaml:"cpus_per_node"`
	MemPerNodeMiB  *int     `yaml:"mem_per_node"`
	Time           string   `yaml:"time"`
	PendingTimeout *float64 `yaml:"pending_timeout"`
	// AdditionalNodeCommand is additional_node_command split into words;
	// nil when absent or null (contract §11).
	AdditionalNodeCommand []string `yaml:"-"`
}

// ResourceSpec is the portable resources of a site: resource_spec.<site>
// over resource_spec["@default"] (contract §7). Nil means unset.
type ResourceSpec struct {
	NumOfGPUs *int
	NumOfCPUs *int
	MemoryMiB *int // "memory" converted from <n>Mi|Gi|Ti
}

// Kit is a validated startup kit (contract §2).
type Kit struct {
	Dir          string // absolute, cleaned
	Role         string // "client" or "server"
	Name         string // site name
	Organization string // O= of the leaf certificate
	// HasStudyRuntime and HasLegacyStudyData say which study files local/ holds.
	HasStudyRuntime    bool
	HasLegacyStudyData bool
}
