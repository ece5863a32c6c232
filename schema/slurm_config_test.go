package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// writeImage creates an empty stand-in container image and returns its path.
// parseSlurm is parseSlurmConfig with this host's checks.
func parseSlurm(file string, data []byte) (*SlurmConfig, Problems) {
	cfg, probs, _ := parseSlurmConfig(file, data, false)
	return cfg, probs
}

func writeImage(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.sif")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// problemLines renders problems as their String forms.
func problemLines(ps Problems) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func TestParseSlurmConfigFull(t *testing.T) {
	img := writeImage(t)
	data, err := os.ReadFile("testdata/slurm-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "IMAGE", img, 1))
	cfg, probs := parseSlurm("slurm.yaml", data)
	if probs != nil {
		t.Fatalf("unexpected problems:\n%v", probs)
	}
	want := JobLauncher{
		Sandbox:    "pyxis",
		Image:      img,
		PythonPath: "/opt/venv/bin/python",
		ParentHost: "login01",
		Directives: []Directive{
			{"time", "04:00:00"}, {"partition", "gpu"}, {"account", "1234"},
			{"qos", "high"}, {"constraint", "a100"}, {"reservation", "maint"},
		},
		Setup:      "module load cuda\n",
		ForwardEnv: []string{"HTTP_PROXY", "https_proxy", "_X1"},
		Executables: Executables{
			Sbatch: "/usr/bin/sbatch", Squeue: "/usr/bin/squeue", Sacct: "/usr/bin/sacct",
			Scancel: "/usr/bin/scancel", Apptainer: "apptainer", Srun: "/opt/slurm/bin/srun",
		},
		InternalPort:               9000,
		InternalConnectionSecurity: "clear",
		SubmitTimeout:              60,
		QueryTimeout:               5.5,
		CancelTimeout:              7,
		PollInterval:               2,
		PendingTimeout:             1800,
		MultiNodePortRange:         PortRange{20000, 20999},
		MultiNodePortRangeSet:      true,
	}
	if !reflect.DeepEqual(cfg.JobLauncher, want) {
		t.Errorf("job_launcher:\n got %+v\nwant %+v", cfg.JobLauncher, want)
	}
	wantParent := &Parent{
		Directives:       []Directive{{"partition", "service"}, {"time", "7-00:00:00"}},
		EnvironmentSetup: "source /opt/venv/bin/activate\n",
	}
	if !reflect.DeepEqual(cfg.Parent, wantParent) {
		t.Errorf("parent:\n got %+v\nwant %+v", cfg.Parent, wantParent)
	}
	if cfg.File != "slurm.yaml" {
		t.Errorf("File = %q", cfg.File)
	}
}

func TestSlurmConfigDefaults(t *testing.T) {
	cfg, probs, _ := LoadSlurmConfig("testdata/slurm-minimal.yaml", false)
	if probs != nil {
		t.Fatal(probs)
	}
	want := JobLauncher{
		Sandbox:                    "none",
		PythonPath:                 "/usr/bin/python3",
		InternalPort:               8102,
		InternalConnectionSecurity: "mtls",
		SubmitTimeout:              30,
		QueryTimeout:               10,
		CancelTimeout:              10,
		PollInterval:               10,
		PendingTimeout:             600,
		MultiNodePortRange:         PortRange{29400, 30399},
	}
	if !reflect.DeepEqual(cfg.JobLauncher, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg.JobLauncher, want)
	}
	if cfg.Parent != nil {
		t.Errorf("Parent = %+v, want nil", cfg.Parent)
	}
}

func TestMultiNodePortRangeDefault(t *testing.T) {
	for _, tc := range []struct {
		port int
		want PortRange
	}{
		{8102, PortRange{29400, 30399}},
		{29399, PortRange{29400, 30399}},
		{29400, PortRange{30400, 31399}},
		{30399, PortRange{30400, 31399}},
		{30400, PortRange{29400, 30399}},
	} {
		if got := DefaultMultiNodePortRange(tc.port); got != tc.want {
			t.Errorf("port %d: got %v, want %v", tc.port, got, tc.want)
		}
		yml := "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /p\n  internal_port: " + strconv.Itoa(tc.port) + "\n"
		cfg, probs := parseSlurm("f.yaml", []byte(yml))
		if probs != nil {
			t.Fatal(probs)
		}
		if cfg.JobLauncher.MultiNodePortRange != tc.want || cfg.JobLauncher.MultiNodePortRangeSet {
			t.Errorf("port %d: config range %v (set %v), want %v unset", tc.port, cfg.JobLauncher.MultiNodePortRange,
				cfg.JobLauncher.MultiNodePortRangeSet, tc.want)
		}
	}
}

func TestSlurmConfigValues(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(*SlurmConfig) bool
	}{
		{"string port range", "  multi_node_port_range: \"40000-40010\"\n", func(c *SlurmConfig) bool {
			return c.JobLauncher.MultiNodePortRange == PortRange{40000, 40010} && c.JobLauncher.MultiNodePortRangeSet
		}},
		{"single port range", "  multi_node_port_range: [40000, 40000]\n", func(c *SlurmConfig) bool {
			return c.JobLauncher.MultiNodePortRange == PortRange{40000, 40000}
		}},
		{"null optional blocks", "  sbatch_directives:\n  forward_env:\n  executables:\n  setup:\n  image:\n", func(c *SlurmConfig) bool {
			return c.JobLauncher.Directives == nil && c.JobLauncher.ForwardEnv == nil && c.JobLauncher.Setup == ""
		}},
		{"integer directive as decimal", "  sbatch_directives: {account: 0x1F, time: 90}\n", func(c *SlurmConfig) bool {
			return reflect.DeepEqual(c.JobLauncher.Directives, []Directive{{"account", "31"}, {"time", "90"}})
		}},
		{"integer timeouts", "  submit_timeout: 1\n  pending_timeout: 1e3\n", func(c *SlurmConfig) bool {
			return c.JobLauncher.SubmitTimeout == 1 && c.JobLauncher.PendingTimeout == 1000
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /p\n" + tc.yaml
			cfg, probs := parseSlurm("f.yaml", []byte(yml))
			if probs != nil {
				t.Fatal(probs)
			}
			if !tc.check(cfg) {
				t.Errorf("unexpected config %+v", cfg.JobLauncher)
			}
		})
	}
}

// TestSlurmConfigProblems pins the exact report of every bad input.
func TestSlurmConfigProblems(t *testing.T) {
	const head = "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"runtime not slurm", "runtime: k8s\njob_launcher: {sandbox: none, python_path: /p}\n",
			[]string{`f.yaml:1:10: runtime: must be slurm (got "k8s")`}},
		{"runtime missing", "job_launcher: {sandbox: none, python_path: /p}\n",
			[]string{`f.yaml:1:1: runtime: is required (The runtime this config is for; must be ` + "`slurm`" + `)`}},
		{"job_launcher missing", "runtime: slurm\n",
			[]string{`f.yaml:1:1: job_launcher: is required (How the parent starts each job's worker as a Slurm batch job)`}},
		{"job_launcher not a mapping", "runtime: slurm\njob_launcher: [a]\n",
			[]string{`f.yaml:2:15: job_launcher: must be a mapping (got list)`}},
		{"unknown top-level key with suggestion", head + "parnet: {}\n",
			[]string{"f.yaml:5:1: parnet: unknown key (allowed: job_launcher, parent, runtime) (did you mean `parent`?)"}},
		{"unknown nested key", head + "  pyhton_path: /x\n",
			[]string{"f.yaml:5:3: job_launcher.pyhton_path: unknown key (allowed: cancel_timeout, executables, forward_env, image, internal_connection_security, internal_port, multi_node_port_range, parent_host, pending_timeout, poll_interval, python_path, query_timeout, sandbox, sbatch_directives, setup, submit_timeout, time_limit_signal) (did you mean `python_path`?)"}},
		{"parent_host with a port", head + "  parent_host: login01:8102\n",
			[]string{`f.yaml:5:16: job_launcher.parent_host: "login01:8102" is neither a host name nor an IPv6 address (the port is always internal_port) (set the host name or address compute nodes use to reach the parent)`}},
		{"parent_host with a path", head + "  parent_host: login01/x\n",
			[]string{`f.yaml:5:16: job_launcher.parent_host: "login01/x" is not a host name or IP address: it contains '/' (set the host name or address compute nodes use to reach the parent)`}},
		{"parent_host with a space", head + "  parent_host: \"login 01\"\n",
			[]string{`f.yaml:5:16: job_launcher.parent_host: "login 01" is not a host name or IP address: it contains ' ' (set the host name or address compute nodes use to reach the parent)`}},
		{"parent_host with user info", head + "  parent_host: fl@login01\n",
			[]string{`f.yaml:5:16: job_launcher.parent_host: "fl@login01" is not a host name or IP address: it contains '@' (set the host name or address compute nodes use to reach the parent)`}},
		{"missing python_path", "runtime: slurm\njob_launcher:\n  sandbox: none\n",
			[]string{`f.yaml:2:1: job_launcher.python_path: is required (Absolute path of the worker's Python interpreter inside the execution environment)`}},
		{"relative python_path", "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: python3\n",
			[]string{`f.yaml:4:16: job_launcher.python_path: must be an absolute path (got "python3")`}},
		{"python_path wrong type", "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: 3\n",
			[]string{`f.yaml:4:16: job_launcher.python_path: must be a string (got integer)`}},
		{"bad sandbox", "runtime: slurm\njob_launcher:\n  sandbox: docker\n  python_path: /p\n",
			[]string{`f.yaml:3:12: job_launcher.sandbox: must be one of apptainer, pyxis, none (got "docker")`}},
		{"misspelt sandbox", "runtime: slurm\njob_launcher:\n  sandbox: apptainr\n  python_path: /p\n",
			[]string{"f.yaml:3:12: job_launcher.sandbox: must be one of apptainer, pyxis, none (got \"apptainr\") (did you mean `apptainer`?)"}},
		{"apptainer without image", "runtime: slurm\njob_launcher:\n  sandbox: apptainer\n  python_path: /p\n",
			[]string{`f.yaml:3:3: job_launcher.image: is required when sandbox is apptainer (set image to the absolute path of the container image file)`}},
		{"pyxis with missing image", "runtime: slurm\njob_launcher:\n  sandbox: pyxis\n  image: /nonexistent/x.sqsh\n  python_path: /p\n",
			[]string{`f.yaml:4:10: job_launcher.image: image /nonexistent/x.sqsh does not exist on this host (prepare needs the image file itself; fix the path or copy the image there)`}},
		{"image is a directory", "runtime: slurm\njob_launcher:\n  sandbox: apptainer\n  image: /\n  python_path: /p\n",
			[]string{`f.yaml:4:10: job_launcher.image: image / is not a regular file (prepare needs the image file itself; fix the path or copy the image there)`}},
		{"relative image", "runtime: slurm\njob_launcher:\n  sandbox: apptainer\n  image: x.sif\n  python_path: /p\n",
			[]string{`f.yaml:4:10: job_launcher.image: must be an absolute path (got "x.sif")`}},
		{"image with sandbox none", head + "  image: /x.sif\n",
			[]string{`f.yaml:5:10: job_launcher.image: must not be set when sandbox is none (remove image, or set sandbox to apptainer or pyxis)`}},
		{"whitespace in directive", head + "  sbatch_directives: {partition: \"gpu a\"}\n",
			[]string{`f.yaml:5:34: job_launcher.sbatch_directives.partition: must not contain whitespace (got "gpu a")`}},
		{"unicode whitespace in directive", head + "  sbatch_directives: {partition: \"gpu\u00a0a\"}\n",
			[]string{`f.yaml:5:34: job_launcher.sbatch_directives.partition: must not contain U+00A0 (byte 4 of the value): it shows as a blank but is not a space to the shell or to Slurm; type a plain space (U+0020)`}},
		{"empty directive", head + "  sbatch_directives: {qos: \"\"}\n",
			[]string{`f.yaml:5:28: job_launcher.sbatch_directives.qos: must not be empty`}},
		{"boolean directive", head + "  sbatch_directives: {qos: true}\n",
			[]string{`f.yaml:5:28: job_launcher.sbatch_directives.qos: must be an integer or a string (got boolean)`}},
		{"unsupported directive", head + "  sbatch_directives:\n    partiton: gpu\n    nodes: 2\n",
			[]string{
				"f.yaml:6:5: job_launcher.sbatch_directives.partiton: unsupported sbatch directive (allowed: partition, account, qos, time, constraint, reservation) (did you mean `partition`?)",
				"f.yaml:7:5: job_launcher.sbatch_directives.nodes: unsupported sbatch directive (allowed: partition, account, qos, time, constraint, reservation) (a job's size is the job's to ask for: `nodes` under launcher_spec.<site>.slurm in its meta.json)",
			}},
		{"parent directive whitespace", head + "parent:\n  sbatch_directives: {time: \"1 day\"}\n",
			[]string{`f.yaml:6:29: parent.sbatch_directives.time: must not contain whitespace (got "1 day")`}},
		{"reserved forward_env", head + "  forward_env: [PYTHONPATH, SLURM_JOB_ID, _nvfl_x, APPTAINERENV_A]\n",
			[]string{
				"f.yaml:5:17: job_launcher.forward_env[0]: PYTHONPATH is launcher-owned and cannot be forwarded (" + launcherOwnedHint + ")",
				"f.yaml:5:29: job_launcher.forward_env[1]: SLURM_JOB_ID is launcher-owned and cannot be forwarded (" + launcherOwnedHint + ")",
				"f.yaml:5:43: job_launcher.forward_env[2]: _nvfl_x is launcher-owned and cannot be forwarded (" + launcherOwnedHint + ")",
				"f.yaml:5:52: job_launcher.forward_env[3]: APPTAINERENV_A is launcher-owned and cannot be forwarded (" + launcherOwnedHint + ")",
			}},
		{"malformed forward_env", head + "  forward_env: [\"A-B\", 1X, \"\", 5]\n",
			[]string{
				`f.yaml:5:17: job_launcher.forward_env[0]: is not a valid environment name: must match [A-Za-z_][A-Za-z0-9_]* (got "A-B")`,
				`f.yaml:5:24: job_launcher.forward_env[1]: is not a valid environment name: must match [A-Za-z_][A-Za-z0-9_]* (got "1X")`,
				`f.yaml:5:28: job_launcher.forward_env[2]: is not a valid environment name: must match [A-Za-z_][A-Za-z0-9_]* (got "")`,
				`f.yaml:5:32: job_launcher.forward_env[3]: must be a string (got integer)`,
			}},
		{"forward_env not a list", head + "  forward_env: HOME\n",
			[]string{`f.yaml:5:16: job_launcher.forward_env: must be a list (got string)`}},
		{"duplicate forward_env", head + "  forward_env: [HOME, HOME]\n",
			[]string{`f.yaml:5:23: job_launcher.forward_env[1]: HOME is listed twice (first at forward_env[0])`}},
		{"port zero", head + "  internal_port: 0\n",
			[]string{`f.yaml:5:18: job_launcher.internal_port: must be at least 1 (got 0)`}},
		{"port too big", head + "  internal_port: 65536\n",
			[]string{`f.yaml:5:18: job_launcher.internal_port: must be at most 65535 (got 65536)`}},
		{"port not integer", head + "  internal_port: 81.5\n",
			[]string{`f.yaml:5:18: job_launcher.internal_port: must be an integer (got number)`}},
		{"port string", head + "  internal_port: \"8102\"\n",
			[]string{`f.yaml:5:18: job_launcher.internal_port: must be an integer (got string)`}},
		{"port range malformed", head + "  multi_node_port_range: \"30000:31000\"\n",
			[]string{`f.yaml:5:26: job_launcher.multi_node_port_range: must be "START-END" with two port numbers (got "30000:31000")`}},
		{"port range reversed", head + "  multi_node_port_range: \"31000-30000\"\n",
			[]string{`f.yaml:5:26: job_launcher.multi_node_port_range: START must not be above END (got 31000-30000)`}},
		{"port range too low", head + "  multi_node_port_range: \"80-90\"\n",
			[]string{`f.yaml:5:26: job_launcher.multi_node_port_range: ports must be within 1024..65535 (got 80-90)`}},
		{"port range list too high", head + "  multi_node_port_range: [1024, 70000]\n",
			[]string{`f.yaml:5:33: job_launcher.multi_node_port_range[1]: must be at most 65535 (got 70000)`}},
		{"port range list length", head + "  multi_node_port_range: [2000]\n",
			[]string{`f.yaml:5:26: job_launcher.multi_node_port_range: must be a list of exactly two ports [START, END]`}},
		{"port range contains internal_port", head + "  internal_port: 29500\n  multi_node_port_range: \"29000-29999\"\n",
			[]string{`f.yaml:6:26: job_launcher.multi_node_port_range: must not contain internal_port 29500 (got 29000-29999) (choose a range that leaves out internal_port)`}},
		{"port range contains default internal_port", head + "  multi_node_port_range: [8000, 9000]\n",
			[]string{`f.yaml:5:26: job_launcher.multi_node_port_range: must not contain internal_port 8102 (got 8000-9000) (choose a range that leaves out internal_port)`}},
		{"bad connection security", head + "  internal_connection_security: tls\n",
			[]string{"f.yaml:5:33: job_launcher.internal_connection_security: must be one of mtls, clear (got \"tls\") (did you mean `mtls`?)"}},
		{"timeouts", head + "  submit_timeout: 0\n  query_timeout: -1\n  cancel_timeout: .nan\n  poll_interval: .inf\n  pending_timeout: \"600\"\n",
			[]string{
				`f.yaml:5:19: job_launcher.submit_timeout: must be at least 1 second (got 0)`,
				`f.yaml:6:18: job_launcher.query_timeout: must be at least 1 second (got -1)`,
				`f.yaml:7:19: job_launcher.cancel_timeout: must be a finite number (got .nan)`,
				`f.yaml:8:18: job_launcher.poll_interval: must be a finite number (got .inf)`,
				`f.yaml:9:20: job_launcher.pending_timeout: must be a number, in seconds (got string)`,
			}},
		{"executables", head + "  executables:\n    sbatch: sbatch\n    srun: \"\"\n    mpirun: /x\n",
			[]string{
				`f.yaml:6:13: job_launcher.executables.sbatch: must be an absolute path (got "sbatch")`,
				`f.yaml:7:11: job_launcher.executables.srun: must not be empty`,
				"f.yaml:8:5: job_launcher.executables.mpirun: unknown key (allowed: apptainer, sacct, sbatch, scancel, squeue, srun)",
			}},
		{"setup with NUL", head + "  setup: \"a\\0b\"\n",
			[]string{`f.yaml:5:10: job_launcher.setup: must not contain NUL (byte 2 of the value)`}},
		{"parent unknown key", head + "parent:\n  setup: x\n",
			[]string{"f.yaml:6:3: parent.setup: unknown key (allowed: environment_setup, sbatch_directives)"}},
		{"duplicate key", head + "  sandbox: apptainer\n",
			[]string{`f.yaml:5:3: job_launcher.sandbox: duplicate key (first defined at line 3) (remove one of them)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, probs := parseSlurm("f.yaml", []byte(tc.yaml))
			if cfg != nil {
				t.Errorf("got a config despite problems")
			}
			got := problemLines(probs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestSlurmConfigReportsEveryProblem: one file with many problems reports
// each of them, in file order.
func TestSlurmConfigReportsEveryProblem(t *testing.T) {
	yml := `runtime: slurm
job_launcher:
  sandbox: docker
  python_path: python
  sbatch_directives:
    partiton: gpu
    time: "1 h"
  forward_env: [SLURM_X]
  internal_port: 0
  poll_interval: -2
  extra: 1
`
	_, probs := parseSlurm("f.yaml", []byte(yml))
	var paths []string
	for _, p := range probs {
		paths = append(paths, p.Path)
	}
	want := []string{
		"job_launcher.sandbox", "job_launcher.python_path", "job_launcher.sbatch_directives.partiton",
		"job_launcher.sbatch_directives.time", "job_launcher.forward_env[0]", "job_launcher.internal_port",
		"job_launcher.poll_interval", "job_launcher.extra",
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths:\n got %q\nwant %q\n%v", paths, want, probs)
	}
}

func TestLoadSlurmConfigUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.yaml")
	_, probs, _ := LoadSlurmConfig(missing, false)
	if got := problemLines(probs); len(got) != 1 || got[0] != missing+": cannot read file: no such file or directory" {
		t.Errorf("missing file: %q", got)
	}
	_, probs, _ = LoadSlurmConfig(dir, false)
	if got := problemLines(probs); len(got) != 1 || got[0] != dir+": is a directory, not a file" {
		t.Errorf("directory: %q", got)
	}
}

func TestCheckConfigForKit(t *testing.T) {
	yml := "runtime: slurm\njob_launcher: {sandbox: none, python_path: /p}\nparent:\n  environment_setup: x\n"
	cfg, probs := parseSlurm("slurm.yaml", []byte(yml))
	if probs != nil {
		t.Fatal(probs)
	}
	if p := CheckConfigForKit(cfg, &Kit{Role: "client", Name: "site-1"}); p != nil {
		t.Errorf("client kit: %v", p)
	}
	got := problemLines(CheckConfigForKit(cfg, &Kit{Role: "server", Name: "server1"}))
	want := []string{"slurm.yaml:3:1: parent: is not allowed for server kit server1: the parent block is for client kits only (remove the parent block, or use a client kit)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("server kit:\n got %q\nwant %q", got, want)
	}
	noParent, _ := parseSlurm("slurm.yaml", []byte("runtime: slurm\njob_launcher: {sandbox: none, python_path: /p}\n"))
	if p := CheckConfigForKit(noParent, &Kit{Role: "server"}); p != nil {
		t.Errorf("server kit without parent: %v", p)
	}
}

func TestImageRealPath(t *testing.T) {
	img := writeImage(t)
	link := filepath.Join(t.TempDir(), "link.sif")
	if err := os.Symlink(img, link); err != nil {
		t.Fatal(err)
	}
	got, err := ImageRealPath(link)
	want, _ := filepath.EvalSymlinks(img)
	if err != nil || got != want {
		t.Errorf("ImageRealPath(link) = %q, %v; want %q", got, err, want)
	}
	if _, err := ImageRealPath(filepath.Dir(img)); err == nil {
		t.Error("a directory passed as image")
	}
}
