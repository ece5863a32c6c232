package compile

import (
	"errors"
	"github.com/flare-slurm/flare-slurm/schema"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveRejects: every rule of contract §5–§8 and §12 fails with an
// error naming the field, and nothing is written.
func TestResolveRejects(t *testing.T) {
	study := func(body string) string { return "format_version: 2\nstudies:\n  s1:\n" + body }
	cases := []struct {
		name    string
		sandbox string
		adjust  func(f *fixture)
		want    []string // substrings of the error
	}{
		{"invalid job id", "none", func(f *fixture) { f.Request["job_id"] = "-bad id" }, []string{"job_id", "not a valid job ID"}},
		{"job id with slash", "none", func(f *fixture) { f.Request["job_id"] = "a/b" }, []string{"job_id", "not a valid job ID"}},
		// A job's run dir is WS/<job id>: a job named like a workspace
		// directory would run in it (and bind WS/startup rw and ro).
		{"job id startup", "apptainer", func(f *fixture) { f.Request["job_id"] = "startup" }, []string{"job_id", `"startup" names a directory of the workspace`}},
		{"job id local", "none", func(f *fixture) { f.Request["job_id"] = "local" }, []string{"job_id", `"local" names a directory of the workspace`}},
		{"job id transfer", "none", func(f *fixture) { f.Request["job_id"] = "transfer" }, []string{"job_id", `"transfer" names a directory`}},
		{"job id jobs-storage", "none", func(f *fixture) { f.Request["job_id"] = "jobs-storage" }, []string{"job_id", `"jobs-storage" names a directory`}},
		{"job id snapshot-storage", "none", func(f *fixture) { f.Request["job_id"] = "snapshot-storage" }, []string{"job_id", `"snapshot-storage" names a directory`}},
		// Issue 25 item 12: text that a reviewer of node.sh, batch.sh or
		// sbatch.argv.json would not read as it runs.
		{"bidi override in a job argument", "none", func(f *fixture) {
			f.args()["parent_url"] = []any{"-p", "tcp://localhost:8102\u202e"}
		}, []string{"job_args.parent_url", "U+202E"}},
		{"bidi isolate in the node command", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{
				"nodes": 2, "additional_node_command": "python worker.py \u2066--rm\u2069"}}}})
		}, []string{"meta.launcher_spec.site-1.slurm.additional_node_command", "U+2066"}},
		{"C1 control in the study", "none", func(f *fixture) {
			f.setMeta(map[string]any{"study": "s1\u009b"})
		}, []string{"request.json:1:", "meta", "control character"}},
		{"run dir missing", "none", func(f *fixture) { f.noRunDir = true }, []string{"job_id", "does not exist"}},
		{"run dir symlink", "none", func(f *fixture) {
			f.noRunDir = true
			target := f.Dir("elsewhere/run")
			f.after = func() { os.Symlink(target, filepath.Join(f.Root, f.JobID)) }
		}, []string{"job_id", "is a symlink"}},
		{"run dir a file", "none", func(f *fixture) {
			f.noRunDir = true
			f.after = func() { os.WriteFile(filepath.Join(f.Root, f.JobID), nil, 0o600) }
		}, []string{"job_id", "is not a directory"}},
		{"unknown job key", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"gpus": 1}}}})
		}, []string{"launcher_spec.site-1.slurm", "gpus"}},
		{"pending timeout above site", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"pending_timeout": 900}}}})
		}, []string{"meta.launcher_spec.site-1.slurm.pending_timeout", "at most 600"}},
		{"pending timeout from the default section", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"default": map[string]any{"slurm": map[string]any{"pending_timeout": 900}},
				"site-1": map[string]any{"slurm": map[string]any{"time": "01:00:00"}}}})
		}, []string{"meta.launcher_spec.default.slurm.pending_timeout: is 900 s but the site allows at most 600 s"}},
		{"pending timeout of the site over the default", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"default": map[string]any{"slurm": map[string]any{"pending_timeout": 60}},
				"site-1": map[string]any{"slurm": map[string]any{"pending_timeout": 700}}}})
		}, []string{"meta.launcher_spec.site-1.slurm.pending_timeout: is 700 s"}},
		{"job image on sandbox none", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"image": "/images/x.sif"}}}})
		}, []string{"slurm.image", "sandbox is none"}},
		{"study image on sandbox none", "none", func(f *fixture) {
			f.Study = study("    container:\n      image: /images/x.sif\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"s1", "container"}},
		{"multi-node with container", "apptainer", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"nodes": 2}}}})
		}, []string{"slurm.nodes", "multi-node", "sandbox none"}},
		{"multi-node with image", "none", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"nodes": 2, "image": "/images/x.sif"}}}})
		}, []string{"slurm.image", "multi-node job must not name an image"}},
		{"gpu arithmetic", "none", func(f *fixture) {
			f.setMeta(map[string]any{"resource_spec": map[string]any{"site-1": map[string]any{"num_of_gpus": 3}},
				"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"nodes": 2, "gpus_per_node": 2}}}})
		}, []string{"num_of_gpus", "nodes * gpus_per_node"}},
		{"multi-node gpus without gpus_per_node", "none", func(f *fixture) {
			f.setMeta(map[string]any{"resource_spec": map[string]any{"site-1": map[string]any{"num_of_gpus": 4}},
				"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"nodes": 2}}}})
		}, []string{"gpus_per_node"}},
		{"mount destination under /proc", "apptainer", func(f *fixture) {
			f.Study = study("    secret_mounts:\n      k:\n        source: /etc/ssl\n        mount_path: /proc/keys\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_mounts.k", "/proc"}},
		{"mount destination over the workspace", "apptainer", func(f *fixture) {
			f.Study = study("    secret_mounts:\n      k:\n        source: /etc/ssl\n        mount_path: " + f.Root + "/local/keys\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_mounts.k", "overlaps the launcher-owned path"}},
		{"mount destination over resolv.conf", "apptainer", func(f *fixture) {
			f.Study = study("    secret_mounts:\n      k:\n        source: /etc/ssl\n        mount_path: /etc/resolv.conf\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_mounts.k", "overlaps the launcher-owned path /etc/resolv.conf"}},
		{"mount destination over /etc/hosts", "pyxis", func(f *fixture) {
			f.Study = study("    secret_mounts:\n      k:\n        source: /etc/ssl\n        mount_path: /etc/hosts\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_mounts.k", "overlaps the launcher-owned path /etc/hosts"}},
		{"mounts overlapping each other", "apptainer", func(f *fixture) {
			f.Study = study("    secret_mounts:\n      k:\n        source: /etc/ssl\n        mount_path: /data/s1/d\n    datasets:\n      d:\n        source: /srv/d\n        mode: ro\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_mounts.k", "overlaps"}},
		{"mount source inside the workspace", "apptainer", func(f *fixture) {
			f.Study = study("    datasets:\n      d:\n        source: " + f.Root + "/data\n        mode: ro\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"datasets.d", "outside the workspace"}},
		{"mount source through a symlink into the workspace", "apptainer", func(f *fixture) {
			link := filepath.Join(f.Base, "link-to-ws")
			f.after = func() { os.Symlink(f.Root, link) }
			f.Study = study("    datasets:\n      d:\n        source: " + link + "/local\n        mode: ro\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"datasets.d", "outside the workspace"}},
		{"colon in a mount", "apptainer", func(f *fixture) {
			f.Study = study("    datasets:\n      d:\n        source: /srv/a:b\n        mode: ro\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"datasets.d"}},
		{"comma in a mount destination", "apptainer", func(f *fixture) {
			f.Study = study("    secret_mounts:\n      k:\n        source: /etc/ssl\n        mount_path: /run/a,b\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_mounts.k"}},
		{"missing secret source", "none", func(f *fixture) {
			f.Study = study("    secret_env:\n      DB_PASSWORD:\n        source: MISSING_SOURCE_VAR\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"secret_env.DB_PASSWORD.source", "MISSING_SOURCE_VAR is not set"}},
		{"env name also forwarded", "none", func(f *fixture) {
			f.Args["forward_env"] = []any{"MODEL"}
			f.Study = study("    env:\n      MODEL: x\n")
			f.setMeta(map[string]any{"study": "s1"})
		}, []string{"studies.s1.env.MODEL", "forward_env"}},
		{"parent url wrong port", "none", func(f *fixture) {
			f.args()["parent_url"] = []any{"-p", "tcp://localhost:9999"}
		}, []string{"job_args.parent_url", "internal_port 8102"}},
		{"parent url wrong scheme", "none", func(f *fixture) {
			f.args()["parent_url"] = []any{"-p", "http://localhost:8102"}
		}, []string{"job_args.parent_url", `scheme "http"`}},
		{"parent url stcp on a clear link", "none", func(f *fixture) {
			f.args()["parent_url"] = []any{"-p", "stcp://localhost:8102"}
		}, []string{"job_args.parent_url", `scheme "stcp"`}},
		{"parent url tcp on an mtls link", "none", func(f *fixture) {
			f.Comm["internal"].(map[string]any)["resources"].(map[string]any)["connection_security"] = "mtls"
			f.args()["parent_conn_sec"] = []any{"--parent_conn_sec", "mtls"}
		}, []string{"job_args.parent_url", `scheme "tcp"`, "must use stcp://"}},
		{"parent_conn_sec mismatch", "none", func(f *fixture) {
			f.args()["parent_conn_sec"] = []any{"--parent_conn_sec", "mtls"}
		}, []string{"job_args.parent_conn_sec", "is mtls", "is clear"}},
		{"parent_conn_sec unknown", "none", func(f *fixture) {
			f.args()["parent_conn_sec"] = []any{"--parent_conn_sec", "tls"}
		}, []string{"job_args.parent_conn_sec", "allowed: clear, mtls"}},
		{"missing parent host outside an allocation", "none", func(f *fixture) {
			delete(f.Args, "parent_host")
		}, []string{"parent_host", "SLURM_JOB_ID is unset"}},
		{"missing parent url", "none", func(f *fixture) { delete(f.args(), "parent_url") }, []string{"job_args.parent_url", "is required"}},
		{"role mismatch", "none", func(f *fixture) {
			f.Request["role"] = "server"
			delete(f.args(), "startup_dir")
			delete(f.args(), "client_name")
			delete(f.args(), "target")
			delete(f.args(), "scheme")
		}, []string{"role", "client workspace"}},
		{"site mismatch", "none", func(f *fixture) { f.Request["site"] = "site-2" }, []string{"site", `"site-1"`}},
		{"unknown job arg", "none", func(f *fixture) { f.args()["app_root"] = []any{"-r", "/x"} }, []string{"job_args.app_root", "not a client job argument"}},
		{"malformed job arg", "none", func(f *fixture) { f.args()["target"] = []any{"-g"} }, []string{"job_args.target", "[flag, value]"}},
		{"options unclosed quote", "none", func(f *fixture) { f.args()["options"] = []any{"--set", "a='b"} }, []string{"job_args.options", "no closing quotation"}},
		{"legacy study file", "none", func(f *fixture) {
			f.File("lustre/site-1/local/study_data.yaml", "studies: {}\n")
		}, []string{"study_data.yaml", "migrate"}},
		{"image missing", "apptainer", func(f *fixture) { f.Args["image"] = filepath.Join(f.Base, "images/missing.sif") }, []string{"image", "not an existing regular file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.sandbox, "client")
			c.adjust(f)
			_, err := f.Resolve()
			if err == nil {
				t.Fatalf("resolve succeeded, want an error mentioning %q", c.want)
			}
			var ps schema.Problems
			if !errors.As(err, &ps) {
				t.Errorf("error is %T, want schema.Problems: %v", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if _, serr := os.Lstat(filepath.Join(f.Root, ".nvflare_slurm")); serr == nil {
				t.Errorf("a failed resolve wrote %s", filepath.Join(f.Root, ".nvflare_slurm"))
			}
		})
	}
}

// TestLoadWorkspaceRejects covers broken site settings.
func TestLoadWorkspaceRejects(t *testing.T) {
	cases := []struct {
		name   string
		adjust func(f *fixture)
		want   []string
	}{
		{"unknown args key", func(f *fixture) { f.Args["internal_connection_security"] = "mtls" }, []string{"slurm_launcher.args", "internal_connection_security"}},
		// A duration that is no positive number (TestLoadWorkspaceClampsDurations:
		// a positive one outside the bounds is moved into them).
		{"poll_interval zero", func(f *fixture) { f.Args["poll_interval"] = 0.0 }, []string{"poll_interval", "must be at least 1 second (got 0)"}},
		{"pending_timeout negative", func(f *fixture) { f.Args["pending_timeout"] = -5.0 }, []string{"pending_timeout", "must be at least 1 second (got -5)"}},
		{"bad sandbox", func(f *fixture) { f.Args["sandbox"] = "docker" }, []string{"slurm_launcher.args.sandbox", "must be one of apptainer, pyxis, none"}},
		{"relative python", func(f *fixture) { f.Args["python_path"] = "python3" }, []string{"python_path", "absolute"}},
		{"bad port", func(f *fixture) { f.Args["internal_port"] = 70000.0 }, []string{"internal_port"}},
		{"bad directive", func(f *fixture) {
			f.Args["sbatch_directives"] = map[string]any{"partition": "a b", "nodelist": "n1"}
		}, []string{"sbatch_directives.partition", "sbatch_directives.nodelist"}},
		{"launcher-owned forward_env", func(f *fixture) { f.Args["forward_env"] = []any{"SLURM_JOB_ID"} }, []string{"forward_env[0]", "SLURM_JOB_ID"}},
		{"workspace moved", func(f *fixture) { f.Args["workspace_path"] = "/elsewhere/site-1" }, []string{"workspace_path", "/elsewhere/site-1"}},
		{"bad comm scheme", func(f *fixture) { f.Comm["internal"] = map[string]any{"scheme": "grpc"} }, []string{"internal.scheme", "allowed: tcp, shared-file"}},
		{"shared-file without root", func(f *fixture) {
			f.Comm["internal"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{}}
		}, []string{"internal.resources.root_dir"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "none", "client")
			c.adjust(f)
			f.Write()
			_, err := schema.LoadWorkspace(f.Root)
			if err == nil {
				t.Fatalf("LoadWorkspace succeeded, want an error mentioning %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// ParseRequest reads and checks a launch request without a workspace, as
// the parse tests and benchmarks need it (ParseAndResolve is what runs):
// field errors come back as schema.Problems, all of them at once, with the
// line and column of the field in data.
func ParseRequest(file string, data []byte) (*schema.LaunchRequest, error) {
	req, ps := schema.ParseLaunchRequest(file, data, "")
	if ps != nil {
		return nil, req.Place(ps)
	}
	return req, nil
}

func TestParseRequestRejects(t *testing.T) {
	cases := map[string][]string{
		`[]`:                          {"not a valid launch request"},
		`{"job_id": "a"} {}`:          {"1:17: not a valid launch request: extra data after the JSON value"},
		`{"job_id":"a","extra":1}`:    {"extra"},
		`{"site":"s","role":"admin"}`: {"job_id: is required", `role: "admin" is not a role`, "job_args: is required"},
		`{"job_id":"a","site":"s","role":"client","job_args":{"job_id":["-n","b"]}}`: {"job_args.job_id", `differs from job_id "a"`},
	}
	for in, wants := range cases {
		_, err := ParseRequest("req.json", []byte(in))
		if err == nil {
			t.Errorf("ParseRequest(%s) succeeded", in)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseRequest(%s) error does not mention %q:\n%v", in, w, err)
			}
		}
	}
}

// FuzzParseRequest: any input either fails with problems or yields a
// request whose job ID and role are valid and whose job args are pairs.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"job_id":"j1","site":"s","role":"client","meta":{},"job_args":{"options":["--set","a=1"]}}`))
	f.Add([]byte(`{"job_id":"../x","role":"server","job_args":{"auth_token":["-t",""]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseRequest("fuzz.json", data)
		if err != nil {
			var ps schema.Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error is not schema.Problems: %v", err)
			}
			return
		}
		if schema.JobIDProblem(req.JobID) != "" || (req.Role != "client" && req.Role != "server") || req.Site == "" {
			t.Fatalf("accepted an invalid request: %+v", req)
		}
		for name, pair := range req.JobArgs {
			if len(pair) != 2 || pair[0] == "" {
				t.Fatalf("job arg %s is not a pair: %q", name, pair)
			}
		}
	})
}

// TestLoadWorkspaceClampsDurations: a hand-edited or older resources.json
// with a positive duration outside its bounds loads with the nearest bound
// and says so: a duration beyond 365 days cannot overflow time.Duration
// (issue 14 item 4), a poll of 0.0001 s cannot run squeue continuously
// (issue 25 item 8), and the workspace's jobs stay watchable.
func TestLoadWorkspaceClampsDurations(t *testing.T) {
	f := newFixture(t, "none", "client")
	f.Args["poll_interval"] = 0.0001
	f.Args["query_timeout"] = 1e10
	f.Args["pending_timeout"] = 31536001.0
	f.Write()
	ws, err := schema.LoadWorkspace(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	if l := ws.Launcher; l.PollInterval != 1 || l.QueryTimeout != 3600 || l.PendingTimeout != 31536000 {
		t.Errorf("poll %v, query %v, pending %v: want 1, 3600 and 31536000", l.PollInterval, l.QueryTimeout, l.PendingTimeout)
	}
	if len(ws.Adjusted) != 3 || !strings.Contains(strings.Join(ws.Adjusted, "\n"), "poll_interval is 0.0001, outside the bounds") {
		t.Errorf("adjusted: %q", ws.Adjusted)
	}
}
