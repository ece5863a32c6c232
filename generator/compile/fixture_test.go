package compile

import (
	"encoding/json"
	"github.com/flare-slurm/flare-slurm/schema"
	"os"
	"path/filepath"
	"testing"
)

// fixture is a prepared workspace built in a temp dir: the files a real
// prepare writes, reduced to what the compiler reads.
type fixture struct {
	t     testing.TB
	Base  string // temp root holding the workspace, images and data
	Root  string // the workspace
	Role  string
	Site  string
	JobID string
	// Args are the slurm_launcher args; Comm is comm_config.json.
	Args  map[string]any
	Comm  map[string]any
	Study string // study_runtime.yaml content; "" writes none
	// Request is the launch request (JSON object).
	Request map[string]any
	Env     map[string]string
	// noRunDir skips creating the run dir; after runs once Write is done.
	noRunDir bool
	after    func()
}

func newFixture(t testing.TB, sandbox, role string) *fixture {
	t.Helper()
	base := t.TempDir()
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	f := &fixture{t: t, Base: base, Root: filepath.Join(base, "lustre", "site-1"), Role: role, Site: "site-1", JobID: "3f6c9a1e-5b7d-4c2e-9f0a-1b2c3d4e5f60"}
	if role == "server" {
		f.Site = "example-server"
	}
	image := any(nil)
	if sandbox != "none" {
		image = f.File("images/nvflare-prod.sif", "image")
	}
	f.Args = map[string]any{
		"sandbox":           sandbox,
		"python_path":       "/opt/nvflare/bin/python3",
		"executables":       map[string]any{"sbatch": nil, "squeue": nil, "sacct": nil, "scancel": nil, "apptainer": nil, "srun": nil},
		"image":             image,
		"internal_port":     8102.0,
		"sbatch_directives": map[string]any{"partition": "fl-gpu", "account": "proj123", "time": "12:00:00"},
		"setup":             "",
		"forward_env":       []any{},
		"parent_host":       "nvflare-site1.internal",
		"poll_interval":     10.0,
		"pending_timeout":   600.0,
		"submit_timeout":    30.0,
		"query_timeout":     10.0,
		"cancel_timeout":    10.0,
		"workspace_path":    f.Root,
	}
	f.Comm = map[string]any{"allow_adhoc_conns": false, "backbone_conn_gen": 2,
		"internal": map[string]any{"scheme": "tcp", "resources": map[string]any{"host": "0.0.0.0", "port": 8102, "connection_security": "clear"}}}
	f.Env = map[string]string{}
	f.Request = f.defaultRequest()
	return f
}

func (f *fixture) defaultRequest() map[string]any {
	var args map[string]any
	if f.Role == "server" {
		args = map[string]any{
			"workspace":           []any{"-m", f.Root},
			"startup_config_file": []any{"-s", "fed_server.json"},
			"app_root":            []any{"-r", filepath.Join(f.Root, f.JobID, "app_server")},
			"job_id":              []any{"-n", f.JobID},
			"parent_url":          []any{"-p", "tcp://localhost:8102"},
			"parent_conn_sec":     []any{"--parent_conn_sec", "clear"},
			"root_url":            []any{"-u", "grpc://server.example.org:8002"},
			"service_host":        []any{"--host", "server.example.org"},
			"service_port":        []any{"--port", "8003"},
			"options":             []any{"--set", "print_conf=True restore_snapshot=false"},
			"auth_token":          []any{"-t", "tok-7d1f0e3b9c"},
			"auth_signature":      []any{"-ts", "sig-44aa19e0"},
			"ssid":                []any{"-d", "ssid-5e2b"},
		}
	} else {
		args = map[string]any{
			"workspace":           []any{"-m", f.Root},
			"startup_dir":         []any{"-w", filepath.Join(f.Root, "startup")},
			"job_id":              []any{"-n", f.JobID},
			"client_name":         []any{"-c", f.Site},
			"parent_url":          []any{"-p", "tcp://localhost:8102"},
			"parent_conn_sec":     []any{"--parent_conn_sec", "clear"},
			"target":              []any{"-g", "server.example.org:8002"},
			"scheme":              []any{"-scheme", "grpc"},
			"startup_config_file": []any{"-s", "fed_client.json"},
			"options":             []any{"--set", "secure_train=true uid=site-1 config_folder=config"},
			"auth_token":          []any{"-t", "tok-7d1f0e3b9c"},
			"auth_signature":      []any{"-ts", "sig-44aa19e0"},
			"ssid":                []any{"-d", "ssid-5e2b"},
		}
	}
	return map[string]any{"job_id": f.JobID, "site": f.Site, "role": f.Role, "meta": map[string]any{}, "job_args": args}
}

// File writes a file under Base and returns its path.
func (f *fixture) File(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.Base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// Dir makes a directory under Base and returns its path.
func (f *fixture) Dir(rel string) string {
	f.t.Helper()
	p := filepath.Join(f.Base, rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) args() map[string]any {
	return f.Request["job_args"].(map[string]any)
}

func (f *fixture) setMeta(meta map[string]any) { f.Request["meta"] = meta }

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Write lays the workspace out on disk (idempotent apart from the files it
// rewrites) and returns the request bytes.
func (f *fixture) Write() []byte {
	t := f.t
	t.Helper()
	dirs := []string{"startup", "local"}
	if !f.noRunDir {
		dirs = append(dirs, f.JobID)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(f.Root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(f.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	path := "nvflare.app_opt.job_launcher.slurm.ClientSlurmJobLauncher"
	if f.Role == "server" {
		path = "nvflare.app_opt.job_launcher.slurm.ServerSlurmJobLauncher"
		writeJSON(t, filepath.Join(f.Root, "startup", "fed_server.json"), map[string]any{"servers": []any{map[string]any{"identity": f.Site}}})
	} else {
		writeJSON(t, filepath.Join(f.Root, "startup", "fed_client.json"), map[string]any{"client": map[string]any{"fqsn": f.Site}})
	}
	writeJSON(t, filepath.Join(f.Root, "local", "resources.json.default"), map[string]any{
		"format_version": 2,
		"components": []any{
			map[string]any{"id": "resource_manager", "path": "nvflare.app_common.resource_managers.passthrough_resource_manager.PassthroughResourceManager", "args": map[string]any{}},
			map[string]any{"id": "slurm_launcher", "path": path, "args": f.Args},
		},
	})
	writeJSON(t, filepath.Join(f.Root, "local", "comm_config.json"), f.Comm)
	st := filepath.Join(f.Root, "local", "study_runtime.yaml")
	if f.Study != "" {
		if err := os.WriteFile(st, []byte(f.Study), 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		os.Remove(st)
	}
	if f.after != nil {
		f.after()
		f.after = nil
	}
	data, err := json.Marshal(f.Request)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (f *fixture) environ() Environ {
	return func(name string) (string, bool) {
		v, ok := f.Env[name]
		return v, ok
	}
}

// Resolve writes the fixture and resolves it.
func (f *fixture) Resolve() (*Plan, error) {
	f.t.Helper()
	data := f.Write()
	ws, err := schema.LoadWorkspace(f.Root)
	if err != nil {
		return nil, err
	}
	req, err := ParseRequest("request.json", data)
	if err != nil {
		return nil, err
	}
	return resolvePlaced(ws, req, f.environ())
}

// resolvePlaced checks one parsed launch request against the workspace and
// returns the plan of effective values, or every problem, placed in the
// request's text.
func resolvePlaced(ws *schema.Workspace, req *schema.LaunchRequest, env Environ) (*Plan, error) {
	plan, ps := resolve(ws, req, env, false)
	if ps != nil {
		return nil, req.Place(ps)
	}
	return plan, nil
}

// MustCompile resolves and compiles, failing the test on any error.
func (f *fixture) MustCompile() (*Plan, *Artifacts) {
	f.t.Helper()
	p, err := f.Resolve()
	if err != nil {
		f.t.Fatalf("resolve: %v", err)
	}
	a, err := p.Compile(f.environ())
	if err != nil {
		f.t.Fatalf("compile: %v", err)
	}
	return p, a
}
