package compile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/schema"
)

// fakeSrun stands in for srun under bash: it records its own argv and
// environment through the stub (at $NVFL_STUB_OUT.srun), then runs its
// last argument (node.sh) once per node, rank by rank, as one task per node
// would: SLURM_NODEID set, each rank recording at $NVFL_STUB_OUT.<rank>.
// $NVFL_FAIL_RANK makes that rank's stub exit 7; the fake exits with the
// last non-zero status.
const fakeSrun = `#!/usr/bin/env bash
set -u
NVFL_STUB_OUT="$NVFL_STUB_OUT.srun" "$NVFL_TEST_STUB" "$@" || exit 90
status=0
for ((i = 0; i < SLURM_JOB_NUM_NODES; i++)); do
  code=0
  if [[ "${NVFL_FAIL_RANK:-}" == "$i" ]]; then code=7; fi
  SLURM_NODEID=$i NVFL_STUB_OUT="$NVFL_STUB_OUT.$i" NVFL_STUB_EXIT=$code "${@: -1}" || status=$?
done
exit $status
`

// allocEnv is the allocation a node group's batch.sh sees in the
// bash tests: three nodes, batch node node-a, Slurm job 4242.
var allocEnv = []string{"SLURM_RESTART_COUNT=0", "SLURM_JOB_NUM_NODES=3", "SLURMD_NODENAME=node-a", "SLURM_JOB_ID=4242"}

// nodeGroupFixture is a three-node client node group with a study secret,
// a study env value, a forwarded variable and a pinned port range; the
// other nodes run the stub with words. Under apptainer (the stub again)
// the job asks for two GPUs per node.
func nodeGroupFixture(t *testing.T, sandbox string, words []string) *fixture {
	f := newFixture(t, sandbox, "client")
	f.Args["executables"].(map[string]any)["apptainer"] = buildStub(t)
	f.useStudy("format_version: 2\nstudies:\n  s1:\n    env:\n      OMP_NUM_THREADS: 8\n    secret_env:\n      API_KEY:\n        source: S1_API_KEY\n")
	f.Env["S1_API_KEY"] = "ak-secret-1"
	f.Args["multi_node_port_range"] = []any{29500, 29599}
	f.Args["forward_env"] = []any{"NCCL_DEBUG"}
	f.Dir("lustre/site-1/" + f.JobID + "/app_site-1")
	f.args()["auth_token"] = []any{"-t", "tok-secret-2"}
	f.args()["ssid"] = []any{"--ssid", "ssid-secret-3"}
	slurm := map[string]any{"nodes": 3, "additional_node_command": shell.Join(append([]string{buildStub(t)}, words...))}
	if sandbox == "apptainer" {
		slurm["gpus_per_node"] = 2
	}
	f.setMeta(map[string]any{"study": "s1", "launcher_spec": map[string]any{"site-1": map[string]any{"slurm": slurm}}})
	return f
}

// nodeGroupRun is one bash run of a node group's batch.sh.
type nodeGroupRun struct {
	code   int
	stderr string
	srun   stubRecord   // what srun got
	ranks  []stubRecord // what each rank's command got; nil where it did not run
}

// runNodeGroup points the fixture's srun at fakeSrun, compiles and writes
// the job and runs batch.sh under bash in the run dir.
func runNodeGroup(t *testing.T, f *fixture, env []string) nodeGroupRun {
	t.Helper()
	stub := buildStub(t)
	srun := filepath.Join(f.Base, "tools", "srun")
	if err := os.MkdirAll(filepath.Dir(srun), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(srun, []byte(fakeSrun), 0o700); err != nil {
		t.Fatal(err)
	}
	f.Args["executables"].(map[string]any)["srun"] = srun
	code, stderr, out := runBatch(t, f, append(env, "NVFL_TEST_STUB="+stub), nil)
	run := nodeGroupRun{code: code, stderr: stderr}
	read := func(path string) (stubRecord, bool) {
		var rec stubRecord
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return rec, false
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		return rec, true
	}
	run.srun, _ = read(out + ".srun")
	for i := 0; i < 3; i++ {
		rec, ok := read(fmt.Sprintf("%s.%d", out, i))
		if !ok {
			run.ranks = append(run.ranks, stubRecord{})
			continue
		}
		run.ranks = append(run.ranks, rec)
	}
	return run
}

// TestNodeGroupUnderBash: batch.sh of a node group exports the rendezvous
// contract and runs node.sh through srun with one task per node and
// --kill-on-bad-exit (pyxis: in the container); node.sh runs the worker
// with its secrets on rank 0 and the additional command, split as written,
// without any secret, in the app dir on the other ranks (apptainer: one
// container per rank, --pwd the app dir, the contract and the GPUs
// mirrored as APPTAINERENV_*) (contract §11).
func TestNodeGroupUnderBash(t *testing.T) {
	for _, sandbox := range []string{"none", "apptainer", "pyxis"} {
		t.Run(sandbox, func(t *testing.T) { checkNodeGroupUnderBash(t, sandbox) })
	}
}

func checkNodeGroupUnderBash(t *testing.T, sandbox string) {
	words := []string{"--flag", "two words", "it's", "$HOME", "`id`", ""}
	f := nodeGroupFixture(t, sandbox, words)
	run := runNodeGroup(t, f, append(allocEnv, "NCCL_DEBUG=INFO", "CUDA_VISIBLE_DEVICES=0,1"))
	if run.code != 0 {
		t.Fatalf("batch.sh exited %d: %s", run.code, run.stderr)
	}
	p, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	v := p.View()
	// The recorded srun argv[0] is the stub the fake srun calls.
	if want := expectedArgv(v, []string{"NCCL_DEBUG"}); !reflect.DeepEqual(run.srun.Argv[1:], want[1:]) {
		t.Errorf("srun argv\n got %q\nwant %q", run.srun.Argv[1:], want[1:])
	}
	prefix := ""
	if sandbox == "apptainer" {
		prefix = "APPTAINERENV_"
	}
	// 29500 + 4242 mod 100 (the range 29500-29599 is 100 ports wide).
	contract := map[string]string{"NVFL_NNODES": "3", "NVFL_MASTER_ADDR": "node-a", "NVFL_MASTER_PORT": "29542", "NVFL_RUN_ID": "4242"}
	for name, want := range contract {
		if got := run.srun.Env[prefix+name]; got != want {
			t.Errorf("srun's environment: %s%s=%q, want %q", prefix, name, got, want)
		}
	}
	secrets := map[string]string{"API_KEY": "ak-secret-1", "NVFLARE_JOB_AUTH_TOKEN": "tok-secret-2", "NVFLARE_JOB_SSID": "ssid-secret-3"}
	for rank, rec := range run.ranks {
		if rec.Argv == nil {
			t.Errorf("rank %d did not run", rank)
			continue
		}
		cmd, pwd := v.WorkerArgv, v.RunDir
		if rank > 0 {
			cmd, pwd = append([]string{buildStub(t)}, words...), v.AppDir
		}
		want := cmd
		if sandbox == "apptainer" {
			want = append(apptainerPrefix(v, pwd), cmd...)
		}
		if !reflect.DeepEqual(rec.Argv, want) {
			t.Errorf("rank %d argv\n got %q\nwant %q", rank, rec.Argv, want)
		}
		seen := map[string]string{"NVFL_NODE_RANK": fmt.Sprint(rank), "OMP_NUM_THREADS": "8", "NCCL_DEBUG": "INFO",
			"PYTHONPATH": v.PythonEnv, ChildProcessEnv: "1"}
		for name, val := range contract {
			seen[name] = val
		}
		if sandbox == "apptainer" {
			seen["CUDA_VISIBLE_DEVICES"] = "0,1"
		}
		for name, want := range seen {
			if got, ok := rec.Env[prefix+name]; !ok || got != want {
				t.Errorf("rank %d: %s%s=%q (set %v), want %q", rank, prefix, name, got, ok, want)
			}
		}
		for name, value := range secrets {
			if rank == 0 {
				if got := rec.Env[prefix+name]; got != value {
					t.Errorf("rank 0 (the worker): secret %s%s=%q, want its value", prefix, name, got)
				}
				continue
			}
			for n, val := range rec.Env {
				if strings.Contains(val, value) || n == name || n == prefix+name {
					t.Errorf("rank %d: %s holds secret %s", rank, n, name)
				}
			}
		}
		for _, b := range nodeGroupBootstrap {
			for _, name := range []string{b.Name, prefix + b.Name} {
				if got, ok := rec.Env[name]; (rank > 0) != ok || (ok && got != b.Value) {
					t.Errorf("rank %d: %s=%q (set %v); want %q on ranks other than 0 only", rank, name, got, ok, b.Value)
				}
			}
		}
		if sandbox != "apptainer" && rec.Cwd != pwd {
			t.Errorf("rank %d ran in %s, want %s", rank, rec.Cwd, pwd)
		}
		if rec.SecretExists {
			t.Errorf("rank %d started while secret.env existed", rank)
		}
		for _, helper := range []string{"NVFL_SRUN", "NVFL_APPTAINER", "_nvfl_secret", "_nvfl_command"} {
			if _, ok := rec.Env[helper]; ok {
				t.Errorf("rank %d: helper variable %s was exported", rank, helper)
			}
		}
	}
}

// TestNodeGroupRankFailure: a failing rank's status comes back out of
// node.sh and batch.sh (srun --kill-on-bad-exit then ends the step).
func TestNodeGroupRankFailure(t *testing.T) {
	f := nodeGroupFixture(t, "none", []string{"x"})
	run := runNodeGroup(t, f, append(allocEnv, "NVFL_FAIL_RANK=2"))
	if run.code != 7 {
		t.Fatalf("batch.sh exited %d, want rank 2's 7: %s", run.code, run.stderr)
	}
}

// TestNodeGroupNeedsAllocation: outside an allocation (no Slurm job id,
// node count or node name) batch.sh stops before srun; node.sh without
// SLURM_NODEID runs nothing.
func TestNodeGroupNeedsAllocation(t *testing.T) {
	t.Parallel()
	for _, drop := range []string{"SLURM_JOB_ID", "SLURM_JOB_NUM_NODES", "SLURMD_NODENAME"} {
		t.Run(drop, func(t *testing.T) {
			var env []string
			for _, kv := range allocEnv {
				if !strings.HasPrefix(kv, drop+"=") {
					env = append(env, kv)
				}
			}
			run := runNodeGroup(t, nodeGroupFixture(t, "none", []string{"x"}), env)
			if run.code == 0 || run.srun.Argv != nil || !strings.Contains(run.stderr, drop) {
				t.Errorf("without %s: exit %d, srun ran %v, stderr %q; want a failure naming it and no srun", drop, run.code, run.srun.Argv != nil, run.stderr)
			}
		})
	}
	f := nodeGroupFixture(t, "none", []string{"x"})
	_, a := f.MustCompile()
	if err := WriteJobDir(a, false); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.Base, "rank.json")
	cmd := exec.Command("bash", filepath.Join(a.JobDir, "node.sh"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "NVFL_STUB_OUT=" + out}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "SLURM_NODEID") {
		t.Errorf("node.sh without SLURM_NODEID: %v, stderr %q; want a failure naming it", err, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("node.sh without SLURM_NODEID ran a command")
	}
}

// TestNodeGroupHostileCommand: commands of hostile words, written the way
// a shell would quote them, reach the other ranks word for word, in each
// sandbox.
func TestNodeGroupHostileCommand(t *testing.T) {
	rng := rand.New(rand.NewSource(0x11))
	n := 12
	if testing.Short() {
		n = 4
	}
	for i := 0; i < n; i++ {
		var words []string
		for j := rng.Intn(6); j >= 0; j-- {
			words = append(words, hostile(rng, "\n\r"))
		}
		f := nodeGroupFixture(t, []string{"none", "apptainer", "pyxis"}[i%3], words)
		run := runNodeGroup(t, f, allocEnv)
		if run.code != 0 {
			t.Fatalf("%q: batch.sh exited %d: %s", words, run.code, run.stderr)
		}
		// Under apptainer the command follows the image.
		want := append([]string{buildStub(t)}, words...)
		for rank := 1; rank < 3; rank++ {
			got := run.ranks[rank].Argv
			if len(got) < len(want) || !reflect.DeepEqual(got[len(got)-len(want):], want) {
				t.Errorf("rank %d argv %q, want it to end in %q", rank, got, want)
			}
		}
	}
}

// TestNodeGroupArtifacts: node.sh is written (0700) beside batch.sh and
// listed by render after it; without the key there is no node.sh, and an
// explicit null (keep application-owned fan-out) compiles exactly as no key.
func TestNodeGroupArtifacts(t *testing.T) {
	t.Parallel()
	f := nodeGroupFixture(t, "none", []string{"x"})
	p, a := f.MustCompile()
	if err := WriteJobDir(a, false); err != nil {
		t.Fatal(err)
	}
	info, err := os.Lstat(filepath.Join(a.JobDir, "node.sh"))
	if err != nil || info.Mode() != 0o700 {
		t.Fatalf("node.sh: %v %v, want a 0700 file", info, err)
	}
	if got, _ := os.ReadFile(filepath.Join(a.JobDir, "node.sh")); !bytes.Equal(got, a.NodeScript) {
		t.Error("node.sh on disk differs from the artifacts")
	}
	files, err := p.ReviewFiles(a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rf := range files {
		names = append(names, rf.Name)
	}
	if want := []string{"batch.sh", "node.sh", "secret.env", "sbatch.argv.json", "plan.json"}; !reflect.DeepEqual(names, want) {
		t.Errorf("review files %v, want %v", names, want)
	}
	for _, secret := range []string{"ak-secret-1", "tok-secret-2", "ssid-secret-3"} {
		if bytes.Contains(a.NodeScript, []byte(secret)) || bytes.Contains(a.BatchScript, []byte(secret)) {
			t.Errorf("secret %s is in a script", secret)
		}
	}

	compileMeta := func(slurm map[string]any) *Artifacts {
		g := newFixture(t, "none", "client")
		g.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": slurm}}})
		_, a := g.MustCompile()
		a.BatchScript = bytes.ReplaceAll(a.BatchScript, []byte(g.Base), []byte("BASE"))
		return a
	}
	plain := compileMeta(map[string]any{"nodes": 2})
	null := compileMeta(map[string]any{"nodes": 2, "additional_node_command": nil})
	if plain.NodeScript != nil || null.NodeScript != nil {
		t.Error("a job without a node command got a node.sh")
	}
	if !bytes.Equal(plain.BatchScript, null.BatchScript) {
		t.Errorf("additional_node_command null changed batch.sh:\n%s\nvs\n%s", plain.BatchScript, null.BatchScript)
	}
	if bytes.Contains(plain.BatchScript, []byte("NVFL_")) || bytes.Contains(plain.BatchScript, []byte("srun")) {
		t.Errorf("an application-owned multi-node job's batch.sh mentions node groups:\n%s", plain.BatchScript)
	}
}

// TestNodeGroupDefaultPortRange: without multi_node_port_range the site's
// default range gives the port, as prepare and NVFlare's launcher do.
func TestNodeGroupDefaultPortRange(t *testing.T) {
	for _, tc := range []struct {
		internal   float64
		start, end int
	}{{8102, 29400, 30399}, {29500, 30400, 31399}} {
		f := nodeGroupFixture(t, "none", []string{"x"})
		delete(f.Args, "multi_node_port_range")
		f.Args["internal_port"] = tc.internal
		f.Comm["internal"].(map[string]any)["resources"].(map[string]any)["port"] = tc.internal
		f.args()["parent_url"] = []any{"-p", fmt.Sprintf("tcp://localhost:%d", int(tc.internal))}
		p, a := f.MustCompile()
		ng := p.View().NodeGroup
		if ng == nil || ng.PortStart != tc.start || ng.PortEnd != tc.end {
			t.Errorf("internal port %v: node group %+v, want ports %d-%d", tc.internal, ng, tc.start, tc.end)
		}
		want := fmt.Sprintf(`export NVFL_MASTER_PORT="$((%d + 10#${SLURM_JOB_ID:?} %% %d))"`, tc.start, tc.end-tc.start+1)
		if !bytes.Contains(a.BatchScript, []byte(want)) {
			t.Errorf("batch.sh lacks %s", want)
		}
	}
}

// TestNodeGroupRejects: every rule on additional_node_command fails the
// compile with the field's request path, and nothing is written.
func TestNodeGroupRejects(t *testing.T) {
	slurm := func(f *fixture, s map[string]any) {
		f.setMeta(map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": s}}})
	}
	const path = "meta.launcher_spec.site-1.slurm.additional_node_command"
	for _, tc := range []struct {
		name    string
		sandbox string
		role    string
		adjust  func(f *fixture)
		want    []string
	}{
		{"server job", "none", "server", func(f *fixture) {
			f.Dir("lustre/site-1/" + f.JobID + "/app_server")
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"example-server": map[string]any{"slurm": map[string]any{"nodes": 2, "additional_node_command": "x"}}}})
		}, []string{"meta.launcher_spec.example-server.slurm.additional_node_command", "only supported for client jobs"}},
		{"one node", "none", "client", func(f *fixture) { slurm(f, map[string]any{"additional_node_command": "x"}) },
			[]string{path, "needs nodes > 1", "nodes 1"}},
		{"one node from the default section", "none", "client", func(f *fixture) {
			f.setMeta(map[string]any{"launcher_spec": map[string]any{"default": map[string]any{"slurm": map[string]any{"additional_node_command": "x"}}}})
		}, []string{"meta.launcher_spec.default.slurm.additional_node_command", "needs nodes > 1"}},
		{"two lines", "none", "client", func(f *fixture) { slurm(f, map[string]any{"nodes": 2, "additional_node_command": "a\nb"}) },
			[]string{path, "must be one line"}},
		{"carriage return", "none", "client", func(f *fixture) { slurm(f, map[string]any{"nodes": 2, "additional_node_command": "a\rb"}) },
			[]string{path, "must be one line"}},
		{"unclosed quote", "none", "client", func(f *fixture) { slurm(f, map[string]any{"nodes": 2, "additional_node_command": "run 'x"}) },
			[]string{path, "no closing quotation"}},
		{"no words", "none", "client", func(f *fixture) { slurm(f, map[string]any{"nodes": 2, "additional_node_command": " \t "}) },
			[]string{path, "at least one word"}},
		{"secret reference", "none", "client", func(f *fixture) {
			slurm(f, map[string]any{"nodes": 2, "additional_node_command": "run --key ${secret:API_KEY}"})
		}, []string{path, "must not reference a secret"}},
		{"secret file reference", "none", "client", func(f *fixture) {
			slurm(f, map[string]any{"nodes": 2, "additional_node_command": "run --key=${secret:file:/run/k}"})
		}, []string{path, "must not reference a secret"}},
		{"not a string", "none", "client", func(f *fixture) { slurm(f, map[string]any{"nodes": 2, "additional_node_command": []any{"a"}}) },
			[]string{path}},
		{"app dir missing", "none", "client", func(f *fixture) { slurm(f, map[string]any{"nodes": 2, "additional_node_command": "x"}) },
			[]string{path, "app_site-1", "not a directory"}},
		{"app dir a symlink", "none", "client", func(f *fixture) {
			target := f.Dir("elsewhere/app")
			f.after = func() { os.Symlink(target, filepath.Join(f.Root, f.JobID, "app_site-1")) }
			slurm(f, map[string]any{"nodes": 2, "additional_node_command": "x"})
		}, []string{path, "symlinks are refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.sandbox, tc.role)
			tc.adjust(f)
			_, err := f.Resolve()
			var ps schema.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("resolve: %v, want problems mentioning %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			for _, p := range ps {
				if strings.Contains(p.Path, "additional_node_command") && p.Line == 0 {
					t.Errorf("problem without a position in the request: %+v", p)
				}
			}
			if _, serr := os.Lstat(filepath.Join(f.Root, ".nvflare_slurm")); serr == nil {
				t.Error("a failed resolve wrote the control dir")
			}
		})
	}
}
