package prepare

import (
	"bytes"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/flare-slurm/flare-slurm/golden"
)

// Golden files of everything prepare renders or rewrites. The workspace is
// rendered in memory (nothing written) for the fixed output below; the
// stand-in image's temp directory is shown as $TMP. Update with
// `make golden` and read the diff.

const goldenOutput = "/lustre/proj123/nvflare/site-1"

func goldenFiles(t *testing.T) *goldie.Goldie {
	return goldie.New(t, goldie.WithFixtureDir(golden.Dir(golden.Prepare)), goldie.WithNameSuffix(".golden"))
}

func goldenFile(t *testing.T, f *fixture, ws *Workspace, rel string) []byte {
	t.Helper()
	file := ws.File(rel)
	if file == nil {
		t.Fatalf("%s not in the rendered workspace", rel)
	}
	data, err := ws.content(file)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(data, []byte(f.dir), []byte("$TMP"))
}

func TestGoldenClient(t *testing.T) {
	f := newFixture(t, "site-1", exampleConfig(t, "slurm.yaml"))
	ws := f.render(t, goldenOutput)
	g := goldenFiles(t)
	g.Assert(t, "client-resources.json.default", goldenFile(t, f, ws, "local/resources.json.default"))
	g.Assert(t, "comm_config-tcp.json", goldenFile(t, f, ws, "local/comm_config.json"))
	g.Assert(t, "start_slurm.sh", goldenFile(t, f, ws, "startup/start_slurm.sh"))
	g.Assert(t, "parent.slurm", goldenFile(t, f, ws, "startup/parent.slurm"))
	g.Assert(t, "study_runtime.yaml", goldenFile(t, f, ws, "local/study_runtime.yaml"))
}

func TestGoldenParentWithoutDirectivesOrSetup(t *testing.T) {
	f := newFixture(t, "site-1", "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\nparent: {}\n")
	ws := f.render(t, goldenOutput)
	goldenFiles(t).Assert(t, "parent-bare.slurm", goldenFile(t, f, ws, "startup/parent.slurm"))
}

func TestGoldenServer(t *testing.T) {
	f := newFixture(t, "server", exampleConfig(t, "server-slurm.yaml"))
	ws := f.render(t, "/lustre/proj123/nvflare/server")
	goldenFiles(t).Assert(t, "server-resources.json.default", goldenFile(t, f, ws, "local/resources.json.default"))
}

func TestGoldenSharedFileCommConfig(t *testing.T) {
	f := newFixture(t, "site-1", "runtime: slurm\njob_launcher:\n  sandbox: none\n  python_path: /usr/bin/python3\n  internal_port: 9210\n")
	writeKitFile(t, f, "local/comm_config.json",
		`{"backbone": {"connect_generation": 1}, "internal": {"scheme": "shared-file", "resources": {"root_dir": "/lustre/proj/cellnet", "poll_interval": 0.05, "lease_timeout": 30}}}`)
	ws := f.render(t, goldenOutput)
	goldenFiles(t).Assert(t, "comm_config-shared-file.json", goldenFile(t, f, ws, "local/comm_config.json"))
}

func TestGoldenTCPCommConfigFromKit(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig+"  internal_port: 9210\n  internal_connection_security: clear\n")
	writeKitFile(t, f, "local/comm_config.json",
		`{"allow_adhoc_conns": false, "internal": {"resources": {"port": 1, "max_message_size": 1e9}, "scheme": "grpc"}, "backbone_conn_gen": 2}`)
	ws := f.render(t, goldenOutput)
	goldenFiles(t).Assert(t, "comm_config-tcp-from-kit.json", goldenFile(t, f, ws, "local/comm_config.json"))
}

// TestGoldenEscaping pins the Python json.dumps forms in a real file:
// non-ASCII and control characters as \uXXXX, no HTML escaping, floats in
// repr form, and the kit's own odd values kept.
func TestGoldenEscaping(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig+
		"  setup: \"echo \\\"h\\u00e9llo \\U0001F600\\\" <&> \\\\ \\t done\"\n"+
		"  poll_interval: 1.5\n  pending_timeout: 3.1536e7\n  parent_host: \"node-\\u00e9\"\n")
	writeKitFile(t, f, "local/resources.json.default",
		`{"description": "Z\u00fcrich <site> & \"friends\"", "ratio": 0.50, "big": 123456789012345678901234567890, "neg": -0, "components": []}`)
	ws := f.render(t, goldenOutput)
	goldenFiles(t).Assert(t, "resources-escaping.json.default", goldenFile(t, f, ws, "local/resources.json.default"))
}
