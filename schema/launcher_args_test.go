package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/ojson"
)

// launcherConfigs are job_launcher blocks whose args must survive the
// round trip; each stresses a different part of the format.
var launcherConfigs = map[string]string{
	"bare": `  sandbox: none
  python_path: /usr/bin/python3
`,
	"apptainer, directives in YAML order, integer directive": `  sandbox: apptainer
  image: /images/flare.sif
  python_path: /opt/venv/bin/python
  sbatch_directives:
    time: "02:00:00"
    partition: gpu
    qos: 7
    reservation: maint
`,
	"every setting": `  sandbox: pyxis
  image: /images/flare.sqsh
  python_path: /opt/venv/bin/python
  parent_host: login01.cluster.example
  setup: |
    module load cuda/12
    export X='a b'
  forward_env: [HTTPS_PROXY, MY_VAR]
  executables:
    sbatch: /opt/slurm/bin/sbatch
    srun: srun
  internal_port: 9000
  internal_connection_security: clear
  submit_timeout: 45
  query_timeout: 2.5
  cancel_timeout: 1
  poll_interval: 3600
  pending_timeout: 3600
  multi_node_port_range: "40000-40100"
  time_limit_signal: {signal: USR1, seconds_before: 120}
`,
	// The range the config states is the default one: it is still "set"
	// (prepare writes it) and must come back as 29400-30399, not 0-0.
	"default port range stated": `  sandbox: none
  python_path: /usr/bin/python3
  multi_node_port_range: 29400-30399
`,
	"port range as a list": `  sandbox: none
  python_path: /usr/bin/python3
  multi_node_port_range: [2000, 2001]
`,
	// internal_port inside the default range moves the default range.
	"internal port inside the default range": `  sandbox: none
  python_path: /usr/bin/python3
  internal_port: 29500
`,
}

// launcherArgsOf parses a job_launcher block the way prepare does and
// returns the args prepare would write for it.
func launcherArgsOf(t testing.TB, block string) LauncherArgs {
	t.Helper()
	// The config check needs the image file: make it, then record the
	// path the block names (prepare records the real path it found).
	images := t.TempDir()
	named := ""
	if _, rest, ok := strings.Cut(block, "image: /images/"); ok {
		named, _, _ = strings.Cut(rest, "\n")
		if err := os.WriteFile(filepath.Join(images, named), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, ps := parseSlurm("slurm.yaml", []byte("runtime: slurm\njob_launcher:\n"+strings.ReplaceAll(block, "/images/", images+"/")))
	if ps != nil {
		t.Fatalf("config: %v", ps)
	}
	jl := cfg.JobLauncher
	if named != "" {
		jl.Image = "/images/" + named
	}
	jl.InternalConnectionSecurity = "" // comm_config.json holds it, not the args
	return LauncherArgs{Launcher: jl, WorkspacePath: "/project/flare/site-1"}
}

// decode runs the compiler's reading of encoded args bytes: args in a
// resources file whose first line is blank, so that the args' own lines
// and columns are the file's.
func decode(t testing.TB, data []byte) (LauncherArgs, Problems) {
	t.Helper()
	path := ClientLauncherPath
	if strings.Contains(string(data), `"`+bridge.BinaryArg+`"`) {
		path = bridge.ClientComponent
	}
	doc := []byte(`{"components": [{"id": "slurm_launcher", "path": "` + path + `", "args":` + "\n" + string(data) + "}]}")
	_, a, ps := readLauncherComponent("resources.json.default", doc)
	for i := range ps {
		ps[i].Line-- // the args' own line numbers
	}
	return a, ps
}

// TestLauncherArgsRoundTrip: what prepare writes, the compiler reads back
// unchanged — directive order, the port range and its default included.
func TestLauncherArgsRoundTrip(t *testing.T) {
	for name, block := range launcherConfigs {
		t.Run(name, func(t *testing.T) {
			a := launcherArgsOf(t, block)
			if strings.HasPrefix(name, "every") {
				a.Binary = "/usr/local/bin/flare-slurm" // the launcher bridge's flare_slurm
			}
			data := ojson.Marshal(a.Encode())
			got, ps := decode(t, data)
			if ps != nil {
				t.Fatalf("decoding what Encode wrote: %v\n%s", ps, data)
			}
			if !reflect.DeepEqual(got, a) {
				t.Errorf("Decode(Encode(a)) != a\n got %+v\nwant %+v\n%s", got, a, data)
			}
		})
	}
}

// TestLauncherArgsDefaultsAndRange pins the two facts the old decoder got
// wrong: directives keep the order prepare wrote, and a config without a
// port range reads back as the default range, not 0-0.
func TestLauncherArgsDefaultsAndRange(t *testing.T) {
	a := launcherArgsOf(t, launcherConfigs["apptainer, directives in YAML order, integer directive"])
	got, _ := decode(t, ojson.Marshal(a.Encode()))
	var keys []string
	for _, d := range got.Launcher.Directives {
		keys = append(keys, d.Key+"="+d.Value)
	}
	if strings.Join(keys, " ") != "time=02:00:00 partition=gpu qos=7 reservation=maint" {
		t.Errorf("directives = %v, want the YAML order", keys)
	}
	if r := got.Launcher.MultiNodePortRange; got.Launcher.MultiNodePortRangeSet || r != (PortRange{Start: 29400, End: 30399}) {
		t.Errorf("no range in the config: got %+v (set %v), want the default 29400-30399, not set", r, got.Launcher.MultiNodePortRangeSet)
	}
	inside := launcherArgsOf(t, launcherConfigs["internal port inside the default range"])
	got, _ = decode(t, ojson.Marshal(inside.Encode()))
	if r := got.Launcher.MultiNodePortRange; r != (PortRange{Start: 30400, End: 31399}) {
		t.Errorf("internal_port 29500: range %+v, want 30400-31399", r)
	}
	if got.Launcher.SubmitTimeout != defaultSubmitTimeout || got.Launcher.InternalPort != 29500 {
		t.Errorf("defaults: %+v", got.Launcher)
	}
}

// TestLauncherArgsProblems: every problem of a damaged args object at
// once, each with its line and column and the key path.
func TestLauncherArgsProblems(t *testing.T) {
	data := []byte(`{
  "sandbox": "docker",
  "python_path": "bin/python",
  "executables": {"sbatch": "", "qsub": "/x"},
  "internal_port": 70000,
  "sbatch_directives": {"nodes": 2, "time": "1 h"},
  "forward_env": ["SLURM_JOB_ID", "A", "A", 3],
  "parent_host": "a b",
  "poll_interval": -1,
  "multi_node_port_range": "9-1",
  "extra": true,
  "workspace_path": "relative"
}`)
	_, ps := decode(t, data)
	// The args are checked as a slurm.yaml's job_launcher: the same
	// messages, under slurm_launcher.args.
	want := []string{
		`resources.json.default:2:14: slurm_launcher.args.sandbox: must be one of apptainer, pyxis, none (got "docker")`,
		`resources.json.default:3:18: slurm_launcher.args.python_path: must be an absolute path (got "bin/python")`,
		`resources.json.default:4:29: slurm_launcher.args.executables.sbatch: must be an absolute path (got "")`,
		`resources.json.default:4:33: slurm_launcher.args.executables.qsub: unknown key (allowed: apptainer, sacct, sbatch, scancel, squeue, srun)`,
		`resources.json.default:5:20: slurm_launcher.args.internal_port: must be at most 65535 (got 70000)`,
		`resources.json.default:6:25: slurm_launcher.args.sbatch_directives.nodes: unsupported sbatch directive`,
		`resources.json.default:6:45: slurm_launcher.args.sbatch_directives.time: must not contain whitespace (got "1 h")`,
		`resources.json.default:7:19: slurm_launcher.args.forward_env[0]: SLURM_JOB_ID is launcher-owned and cannot be forwarded`,
		`resources.json.default:7:40: slurm_launcher.args.forward_env[2]: A is listed twice (first at forward_env[1])`,
		`resources.json.default:7:45: slurm_launcher.args.forward_env[3]: must be a string (got integer)`,
		`resources.json.default:8:18: slurm_launcher.args.parent_host: "a b" is not a host name or IP address`,
		`resources.json.default:9:20: slurm_launcher.args.poll_interval: must be at least 1 second (got -1)`,
		`resources.json.default:10:28: slurm_launcher.args.multi_node_port_range: ports must be within 1024..65535 (got 9-1)`,
		`resources.json.default:11:3: slurm_launcher.args.extra: is not a launcher setting (prepare the workspace again with this flare-slurm)`,
		`resources.json.default:12:21: slurm_launcher.args.workspace_path: must be an absolute path`,
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing problem %q\ngot:\n%s", w, all)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(ps), len(want), all)
	}
}

// TestLauncherArgsPortRangeRule: the compiler applies prepare's own range
// rule (checkPortRange) to a hand-edited workspace: a range holding
// internal_port, or text prepare would refuse, is a problem.
func TestLauncherArgsPortRangeRule(t *testing.T) {
	for doc, want := range map[string]string{
		`{"sandbox": "none", "python_path": "/p", "workspace_path": "/w", "internal_port": 30000, "multi_node_port_range": [29400, 30399]}`: "must not contain internal_port 30000 (got 29400-30399)",
		`{"sandbox": "none", "python_path": "/p", "workspace_path": "/w", "multi_node_port_range": " 2000 - 2001"}`:                         `must be "START-END" with two port numbers`,
		`{"sandbox": "none", "python_path": "/p", "workspace_path": "/w", "multi_node_port_range": "3000-2000"}`:                            "START must not be above END (got 3000-2000)",
	} {
		_, ps := decode(t, []byte(doc))
		if len(ps) != 1 || !strings.Contains(ps[0].Message, want) {
			t.Errorf("%s: %v, want %q", doc, ps, want)
		}
	}
}

// TestReadLauncherComponent: the role comes from the component path, and
// a resources file without exactly one launcher component is refused.
func TestReadLauncherComponent(t *testing.T) {
	a := launcherArgsOf(t, launcherConfigs["bare"])
	args := string(ojson.Marshal(a.Encode()))
	a.Binary = "/opt/flare-slurm/bin/flare-slurm"
	bridgeArgs := string(ojson.Marshal(a.Encode()))
	for _, tc := range []struct {
		name, doc, role, problem string
	}{
		{"client", `{"components": [{"id": "slurm_launcher", "path": "` + ClientLauncherPath + `", "args": ` + args + `}]}`, roleClient, ""},
		{"server", `{"components": [{"id": "x"}, {"id": "slurm_launcher", "path": "` + ServerLauncherPath + `", "args": ` + args + `}]}`, RoleServer, ""},
		{"bridge", `{"components": [{"id": "slurm_launcher", "path": "` + bridge.ServerComponent + `", "args": ` + bridgeArgs + `}]}`, RoleServer, ""},
		{"bridge without its binary", `{"components": [{"id": "slurm_launcher", "path": "` + bridge.ClientComponent + `", "args": ` + args + `}]}`, "", "slurm_launcher.args.flare_slurm: must be the absolute path of the flare-slurm binary"},
		{"binary on NVFlare's launcher", `{"components": [{"id": "slurm_launcher", "path": "` + ClientLauncherPath + `", "args": ` + bridgeArgs + `}]}`, "", "flare_slurm: is an argument of the flare-slurm launcher bridge, not of " + ClientLauncherPath},
		{"none", `{"components": []}`, "", "components: has 0 slurm_launcher components, want exactly one"},
		{"two", `{"components": [{"id": "slurm_launcher"}, {"id": "slurm_launcher"}]}`, "", "has 2 slurm_launcher"},
		{"other path", `{"components": [{"id": "slurm_launcher", "path": "my.Launcher", "args": ` + args + `}]}`, "", `:1:50: slurm_launcher.path: "my.Launcher" is not a Slurm launcher`},
		{"syntax", `{"components": [}`, "", "resources.json.default:1:17: not a valid resources file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role, got, ps := readLauncherComponent("resources.json.default", []byte(tc.doc))
			if tc.problem == "" {
				if ps != nil || role != tc.role || got.WorkspacePath != "/project/flare/site-1" {
					t.Errorf("role %q, args %+v, problems %v", role, got, ps)
				}
				return
			}
			if !strings.Contains(ps.Error(), tc.problem) {
				t.Errorf("problems %q, want %q", ps.Error(), tc.problem)
			}
		})
	}
}

// FuzzLauncherArgs: whatever args decode without a problem encode to
// args that decode to the same value, and encoding is stable.
func FuzzLauncherArgs(f *testing.F) {
	for _, block := range launcherConfigs {
		f.Add(ojson.Marshal(launcherArgsOf(f, block).Encode()))
	}
	f.Add([]byte(`{"sandbox": "none", "python_path": "/p", "workspace_path": "/w", "internal_port": 1.0, "sbatch_directives": {"qos": 3}, "multi_node_port_range": " 2000 - 2001"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ojson.Parse(data); err != nil {
			return
		}
		a, ps := decode(t, data)
		if ps != nil {
			return
		}
		enc := ojson.Marshal(a.Encode())
		b, ps := decode(t, enc)
		if ps != nil {
			t.Fatalf("decoding the encoding of accepted args: %v\n%s", ps, enc)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the args\n got %+v\nwant %+v", b, a)
		}
		if again := ojson.Marshal(b.Encode()); string(again) != string(enc) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, again)
		}
	})
}

// TestLauncherArgsTextRule (issue 25 item 12): a hand-edited
// resources.json.default holding a bidi override, a C1 control or an ESC
// in a value that reaches the batch script or the sbatch argv is refused
// at run time, as validate refuses it in slurm.yaml.
func TestLauncherArgsTextRule(t *testing.T) {
	data := []byte(`{
  "sandbox": "none",
  "python_path": "/usr/bin/python3\u202e",
  "setup": "module load a\u2066",
  "executables": {"sbatch": "/usr/bin/sbatch\u0085"},
  "sbatch_directives": {"partition": "gpu\u001b[2J"},
  "workspace_path": "/ws"
}`)
	_, ps := decode(t, data)
	var got []string
	for _, p := range ps {
		got = append(got, p.Path+": "+p.Message)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"slurm_launcher.args.python_path: must not contain the invisible Unicode character U+202E",
		"slurm_launcher.args.setup: must not contain the invisible Unicode character U+2066",
		"slurm_launcher.args.executables.sbatch: must not contain the C1 control character U+0085",
		`slurm_launcher.args.sbatch_directives.partition: must not contain the control character '\x1b'`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
}

// TestLauncherArgsOutOfBoundDurationsAreClamped: a workspace prepared
// before the duration bounds (issue 25 item 8) stays usable: a positive
// duration outside its bound is moved into it and said, never refused
// (status, wait, cancel and gc must keep working on the jobs it runs;
// validate and prepare refuse such a value). A negative, zero or
// non-finite one is still refused.
func TestLauncherArgsOutOfBoundDurationsAreClamped(t *testing.T) {
	args := `{"sandbox": "none", "python_path": "/usr/bin/python3", "workspace_path": "/w",
"poll_interval": 0.5, "query_timeout": 7200, "pending_timeout": 600}`
	got, ps := decode(t, []byte(args)) // the args from line 2 of the file
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	if got.Launcher.PollInterval != 1 || got.Launcher.QueryTimeout != 3600 || got.Launcher.PendingTimeout != 600 {
		t.Errorf("poll %v, query %v, pending %v; want 1 and 3600 (clamped), 600", got.Launcher.PollInterval, got.Launcher.QueryTimeout, got.Launcher.PendingTimeout)
	}
	want := []string{
		"resources.json.default:3:40: slurm_launcher.args.query_timeout is 7200, outside the bounds (a number of seconds from 1 to 3600 (one hour)): 3600 is used; set job_launcher.query_timeout in slurm.yaml and prepare again",
		"resources.json.default:3:18: slurm_launcher.args.poll_interval is 0.5, outside the bounds (a number of seconds from 1 to 3600 (one hour)): 1 is used; set job_launcher.poll_interval in slurm.yaml and prepare again",
	}
	if strings.Join(got.Adjusted, "\n") != strings.Join(want, "\n") {
		t.Errorf("adjusted:\n%s\nwant:\n%s", strings.Join(got.Adjusted, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{"0", "-2"} {
		if _, ps := decode(t, []byte(strings.Replace(args, "0.5", bad, 1))); len(ps) != 1 {
			t.Errorf("poll_interval %s: %v, want refused", bad, ps)
		}
	}
}
