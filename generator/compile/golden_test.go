package compile

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/flare-slurm/flare-slurm/golden"
	"github.com/flare-slurm/flare-slurm/schema"
)

// goldenBase replaces the fixture's temp dir in golden files, so paths are
// stable and read like a real site's.
const goldenBase = "/cluster"

const fullStudy = `format_version: 2
studies:
  pathology:
    container:
      image: IMAGES/pathology.sif
    datasets:
      slides:
        source: DATA/pathology/slides
        mode: ro
      scratch:
        source: DATA/pathology/scratch
        mode: rw
    env:
      MODEL_FAMILY: vit-large
      EMPTY_VALUE: ""
      USE_AMP: true
      GREETING: "it's a $(test) ` + "`value`" + `"
    secret_env:
      DB_PASSWORD:
        source: PATHOLOGY_DB_PASSWORD
    secret_mounts:
      tls:
        source: DATA/secrets/tls
        mount_path: /run/secrets/tls
    slurm:
      partition: fl-gpu-large
      account: pathology-project
      qos: high
`

// variants are the golden cases: each function adjusts a fresh fixture.
var variants = []struct {
	name    string
	sandbox string
	role    string
	adjust  func(f *fixture)
}{
	{"none-client", "none", "client", nil},
	{"none-server", "none", "server", func(f *fixture) {
		// A server job's app folder is app_server (NVFlare's server
		// workspace name), not app_<identity>.
		f.Dir("lustre/site-1/" + f.JobID + "/app_server/custom")
	}},
	{"apptainer-client", "apptainer", "client", nil},
	{"apptainer-server", "apptainer", "server", nil},
	{"pyxis-client", "pyxis", "client", nil},
	{"pyxis-server", "pyxis", "server", nil},
	{"apptainer-study", "apptainer", "client", func(f *fixture) {
		// Study image, datasets, secret mounts, env (empty, boolean and
		// shell-hostile values), secret_env, partition/account/qos, setup,
		// forward_env, configured apptainer path, one-node GPUs.
		f.useStudy(fullStudy)
		f.Args["setup"] = "source /etc/profile.d/modules.sh\nmodule load apptainer/1.3\n"
		f.Args["forward_env"] = []any{"HF_HOME", "WANDB_DIR"}
		f.Args["executables"].(map[string]any)["apptainer"] = "/opt/apptainer/1.3/bin/apptainer"
		f.Env["PATHOLOGY_DB_PASSWORD"] = "hunter2-db"
		f.setMeta(map[string]any{"study": "pathology", "resource_spec": map[string]any{"site-1": map[string]any{"num_of_gpus": 2}}})
		f.Dir("lustre/site-1/" + f.JobID + "/app_site-1/custom")
		f.Dir("lustre/site-1/local/custom")
	}},
	{"pyxis-study", "pyxis", "client", func(f *fixture) {
		// Job image over the study image, cpus/mem and time from job keys,
		// configured srun path, forward_env.
		f.useStudy(fullStudy)
		f.Args["forward_env"] = []any{"NCCL_DEBUG"}
		f.Args["executables"].(map[string]any)["srun"] = "/opt/slurm/current/bin/srun"
		f.Env["PATHOLOGY_DB_PASSWORD"] = "hunter2-db"
		job := f.File("images/job-byoc.sqsh", "job image")
		f.setMeta(map[string]any{"study": "pathology", "launcher_spec": map[string]any{
			"default": map[string]any{"slurm": map[string]any{"time": "01:00:00"}},
			"site-1":  map[string]any{"slurm": map[string]any{"image": job, "cpus_per_node": 8, "mem_per_node": 32768, "time": "02:00:00", "pending_timeout": 300}},
		}})
	}},
	{"none-multinode-gpus", "none", "client", func(f *fixture) {
		// Multi-node bare job with gpus_per_node; num_of_cpus and memory
		// from resource_spec["@default"] (NVFlare refuses them next to
		// cpus_per_node and mem_per_node).
		f.setMeta(map[string]any{
			"resource_spec": map[string]any{"@default": map[string]any{"num_of_cpus": 16, "memory": "64Gi"}, "site-1": map[string]any{"num_of_gpus": 8}},
			"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"nodes": 2, "gpus_per_node": 4}}},
		})
	}},
	{"none-nodegroup", "none", "client", func(f *fixture) {
		// A launcher-owned node group (contract §11): the command comes
		// from launcher_spec.default, nodes and GPUs from the site; the
		// site pins multi_node_port_range and srun; a study secret and the
		// credentials are dropped on the other nodes.
		f.useStudy(`format_version: 2
studies:
  genomics:
    env:
      OMP_NUM_THREADS: 8
    secret_env:
      API_KEY:
        source: GENOMICS_API_KEY
    slurm:
      sandbox: none
`)
		f.Args["multi_node_port_range"] = "29500-29599"
		f.Args["forward_env"] = []any{"NCCL_DEBUG"}
		f.Args["executables"].(map[string]any)["srun"] = "/opt/slurm/current/bin/srun"
		f.Env["GENOMICS_API_KEY"] = "ak-99812"
		f.Dir("lustre/site-1/" + f.JobID + "/app_site-1/custom")
		f.setMeta(map[string]any{"study": "genomics",
			"resource_spec": map[string]any{"site-1": map[string]any{"num_of_gpus": 6}},
			"launcher_spec": map[string]any{
				"default": map[string]any{"slurm": map[string]any{"additional_node_command": `python -m nvflare.app_opt.pt.torchrun_node --nproc-per-node=2 "custom/train job.py" --tag 'it'\''s' $HOME`}},
				"site-1":  map[string]any{"slurm": map[string]any{"nodes": 3, "gpus_per_node": 2}},
			}})
	}},
	{"apptainer-nodegroup", "apptainer", "client", func(f *fixture) {
		// A node group under apptainer: one container per node, the
		// contract and the GPUs mirrored; the job's own image.
		f.useStudy(fullStudy)
		f.Env["PATHOLOGY_DB_PASSWORD"] = "hunter2-db"
		f.Dir("lustre/site-1/" + f.JobID + "/app_site-1")
		f.setMeta(map[string]any{"study": "pathology", "launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{
			"nodes": 2, "gpus_per_node": 4, "additional_node_command": "python -m nvflare.app_opt.pt.torchrun_node --nproc-per-node=4 custom/train.py"}}}})
	}},
	{"pyxis-nodegroup", "pyxis", "client", func(f *fixture) {
		// A node group under pyxis: srun carries the container flags, the
		// job dir is mounted read-only so node.sh runs inside the container.
		f.Args["forward_env"] = []any{"NCCL_DEBUG"}
		f.Dir("lustre/site-1/" + f.JobID + "/app_site-1")
		f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{
			"nodes": 4, "additional_node_command": "bash -c 'exec torchrun --nnodes=\"$NVFL_NNODES\" --node_rank=\"$NVFL_NODE_RANK\" custom/train.py'"}}}})
	}},
	{"none-study-env", "apptainer", "client", func(f *fixture) {
		// A study switches an apptainer site to bare mode with its own
		// python and an empty setup; env with empty and boolean values,
		// secret_env, forward_env.
		f.useStudy(`format_version: 2
studies:
  genomics:
    env:
      EMPTY: ""
      FLAG_ON: true
      FLAG_OFF: false
      THREADS: 8
    secret_env:
      API_KEY:
        source: GENOMICS_API_KEY
    slurm:
      sandbox: none
      python_path: /opt/genomics/bin/python
      setup: ""
`)
		f.Args["setup"] = "module load apptainer\n"
		f.Args["forward_env"] = []any{"OMP_PLACES"}
		f.Env["GENOMICS_API_KEY"] = "ak-99812"
		f.setMeta(map[string]any{"study": "genomics"})
	}},
	{"apptainer-shared-file", "apptainer", "client", func(f *fixture) {
		root := f.Dir("lustre/fl-comm")
		f.Comm["internal"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{"root_dir": root, "connection_security": "clear"}}
		f.args()["parent_url"] = []any{"-p", "shared-file://0" + root + "/lst_1a2b3c4d?poll_interval=0.5"}
		// A Client API Attach root beside the listener: its own rw bind.
		f.Comm["client_api_attach"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{"root_dir": f.Dir("lustre/fl-attach") + "/"}}
	}},
	{"none-ipv6-parent", "none", "client", func(f *fixture) {
		f.Args["parent_host"] = "fd00:10:20::7"
	}},
	{"none-allocation-parent", "none", "client", func(f *fixture) {
		delete(f.Args, "parent_host")
		f.Env["SLURM_JOB_ID"] = "4242"
		f.Env["SLURMD_NODENAME"] = "gpu-node-017"
	}},
	{"apptainer-mtls", "apptainer", "server", func(f *fixture) {
		f.Comm["internal"].(map[string]any)["resources"].(map[string]any)["connection_security"] = "mtls"
		f.args()["parent_conn_sec"] = []any{"--parent_conn_sec", "mtls"}
		f.args()["parent_url"] = []any{"-p", "stcp://localhost:8102/path?x=1"}
	}},
}

// useStudy writes a study runtime, creating the images and data it names.
func (f *fixture) useStudy(text string) {
	images, data := filepath.Join(f.Base, "images"), filepath.Join(f.Base, "data")
	text = string(bytes.ReplaceAll([]byte(text), []byte("IMAGES/"), []byte(images+"/")))
	text = string(bytes.ReplaceAll([]byte(text), []byte("DATA/"), []byte(data+"/")))
	f.File("images/pathology.sif", "study image")
	f.Dir("data/pathology/slides")
	f.Dir("data/secrets/tls")
	f.Study = text
}

func renderReview(t *testing.T, f *fixture) []ReviewFile {
	t.Helper()
	p, err := f.Resolve()
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	a, err := p.CompileRedacted(f.environ())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	files, err := p.ReviewFiles(a)
	if err != nil {
		t.Fatal(err)
	}
	// The workspace's identity in the job's marker is that of the temporary
	// path: shown as that of the path the golden files name.
	ws := strings.Replace(f.Root, f.Base, goldenBase, 1)
	for i := range files {
		files[i].Data = bytes.ReplaceAll(files[i].Data, []byte(schema.WorkspaceID(f.Root)), []byte(schema.WorkspaceID(ws)))
		files[i].Data = bytes.ReplaceAll(files[i].Data, []byte(f.Base), []byte(goldenBase))
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			f := newFixture(t, v.sandbox, v.role)
			if v.adjust != nil {
				v.adjust(f)
			}
			files := renderReview(t, f)
			g := goldie.New(t, goldie.WithFixtureDir(filepath.Join(golden.Dir(golden.Compile), v.name)), goldie.WithNameSuffix(""))
			for _, file := range files {
				g.Assert(t, file.Name, file.Data)
			}
			// Byte-stable: a second compile of the same inputs is identical.
			again := renderReview(t, f)
			for i := range files {
				if !bytes.Equal(files[i].Data, again[i].Data) {
					t.Errorf("%s differs between two compiles of the same inputs", files[i].Name)
				}
			}
		})
	}
}
