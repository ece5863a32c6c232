package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/shell"
	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// nodeRank is the payload of the node-group tests. Rank 0 runs it as the
// worker (the worker stand-in's behaviour), the other ranks as the job's
// additional_node_command. Each rank records where it runs and what it
// sees in rank-<rank>.json in the run dir; rank 0 listens on
// NVFL_MASTER_ADDR:NVFL_MASTER_PORT and every other rank connects to it
// there (a small rendezvous). Then the run dir's ./mode decides: "ok"
// exits 0, "fail" makes rank 2 exit 3 and the others hold, "hold" holds.
// Rank 2 fails only once every rank has recorded itself (the run dir is
// the nodes' shared file system): otherwise its failure could end the job
// before a slower rank starts, and the test could not tell a lost rank
// from a late one. A rank that holds for 240 s writes survived-<rank>.
const nodeRank = `import json, os, socket, sys, time

run = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ)
rank = int(env["NVFL_NODE_RANK"])
master, port, nnodes = env["NVFL_MASTER_ADDR"], int(env["NVFL_MASTER_PORT"]), int(env["NVFL_NNODES"])

def write(name, text):
    with open(os.path.join(run, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(run, name + ".tmp"), os.path.join(run, name))

write(f"rank-{rank}.json", json.dumps({"host": socket.gethostname(), "cwd": os.getcwd(), "pid": os.getpid(), "env": env}))

deadline = time.monotonic() + 120
if rank == 0:
    srv = socket.create_server((master, port))
    srv.settimeout(120)
    got = []
    for _ in range(nnodes - 1):
        conn, peer = srv.accept()
        with conn:
            msg = conn.makefile().readline().strip()
            conn.sendall(f"welcome run={env['NVFL_RUN_ID']} from={socket.gethostname()}\n".encode())
        got.append(f"{msg} from={peer[0]}")
    write("rendezvous.txt", "\n".join(sorted(got)) + "\n")
else:
    while True:
        try:
            conn = socket.create_connection((master, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with conn:
        conn.sendall(f"rank={rank} run={env['NVFL_RUN_ID']}\n".encode())
        reply = conn.makefile().readline().strip()
    write(f"reply-{rank}.txt", reply + "\n")

mode = open(os.path.join(run, "mode")).read().strip()
if mode == "fail" and rank == 2:
    while not all(os.path.exists(os.path.join(run, f"rank-{r}.json")) for r in range(nnodes)):
        if time.monotonic() > deadline:
            sys.exit(4)
        time.sleep(0.1)
    sys.exit(3)
if mode in ("fail", "hold"):
    time.sleep(240)
    write(f"survived-{rank}", "")
`

// rankSeen is what one rank recorded.
type rankSeen struct {
	Host string            `json:"host"`
	Cwd  string            `json:"cwd"`
	PID  int               `json:"pid"`
	Env  map[string]string `json:"env"`
}

// nodeGroupSite is a site on the three-node partition with a study whose
// secret comes from the parent's environment.
func nodeGroupSite(t *testing.T, sandbox string) (*site, slurmtest.Nodes, string) {
	c, nodes := slurmtest.RequireNodes(t, 3)
	s := newSite(t, c, siteOpts{partition: nodes.Partition, sandbox: sandbox})
	secret := fmt.Sprintf("db-secret-%d", time.Now().UnixNano())
	s.env = []string{"S1_DB_PASSWORD=" + secret}
	c.WriteFile(t, path.Join(s.ws, "local", "study_runtime.yaml"),
		[]byte("format_version: 2\nstudies:\n  s1:\n    env:\n      S1_MODE: node-group\n    secret_env:\n      DB_PASSWORD:\n        source: S1_DB_PASSWORD\n"), 0o600)
	return s, nodes, secret
}

// nodeGroupJob prepares a three-node node-group job whose worker and
// additional command both run nodeRank, in mode.
func (s *site) nodeGroupJob(jobID, mode string) (req, token string) {
	s.t.Helper()
	return s.nodeGroupJobWith(jobID, mode, nil)
}

// nodeGroupJobWith is nodeGroupJob with more launcher_spec slurm keys.
func (s *site) nodeGroupJobWith(jobID, mode string, slurm map[string]any) (req, token string) {
	s.t.Helper()
	run := path.Join(s.ws, jobID)
	s.c.Mkdir(s.t, run, 0o700)
	s.c.Mkdir(s.t, path.Join(run, "app_site-1"), 0o700)
	s.c.WriteFile(s.t, path.Join(run, "rank.py"), []byte(nodeRank), 0o600)
	s.c.WriteFile(s.t, path.Join(run, "mode"), []byte(mode+"\n"), 0o600)
	command := shell.Join([]string{"python3", path.Join(run, "rank.py")})
	spec := map[string]any{"nodes": 3, "additional_node_command": command}
	for k, v := range slurm {
		spec[k] = v
	}
	return s.job(jobID, "exec python3 ./rank.py", map[string]any{"study": "s1", "launcher_spec": map[string]any{
		"site-1": map[string]any{"slurm": spec}}})
}

// ranks reads what each of the three ranks recorded.
func (s *site) ranks(jobID string) []rankSeen {
	s.t.Helper()
	var out []rankSeen
	for rank := 0; rank < 3; rank++ {
		var r rankSeen
		if err := json.Unmarshal([]byte(s.read(path.Join(s.ws, jobID, fmt.Sprintf("rank-%d.json", rank)))), &r); err != nil {
			s.t.Fatalf("rank %d: %v", rank, err)
		}
		out = append(out, r)
	}
	return out
}

// slurmOut is the job's Slurm output file, for failure messages.
func (s *site) slurmOut(jobID, slurmID string) string {
	b, _ := os.ReadFile(s.c.HostPath(path.Join(s.ws, jobID, "slurm-"+slurmID+".out")))
	return string(b)
}

// TestNodeGroupJob, per sandbox: a three-node node group (contract §11) runs the worker
// on rank 0 and the additional command on the two other nodes, each on a
// different node; all see the same NVFL_MASTER_ADDR (rank 0's node),
// NVFL_MASTER_PORT (from the site's default range) and NVFL_RUN_ID (the
// Slurm job id), the other ranks reach rank 0 over TCP at that address,
// they run in the app dir, and only rank 0 gets the credentials and the
// study secret. The job succeeds.
func TestNodeGroupJob(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, testNodeGroupJob)
}

func testNodeGroupJob(t *testing.T, sandbox string) {
	s, nodes, secret := nodeGroupSite(t, sandbox)
	req, token := s.nodeGroupJob("job-ng-ok", "ok")
	l := s.launch(req)
	st := s.wait("job-ng-ok", 5*time.Minute)
	if st.ReturnCode != 0 || st.State != "COMPLETED" {
		t.Fatalf("result %+v\njob output:\n%s", st, s.slurmOut("job-ng-ok", l.SlurmJobID))
	}
	ranks := s.ranks("job-ng-ok")
	id, _ := strconv.Atoi(l.SlurmJobID)
	wantPort := fmt.Sprint(29400 + id%1000) // the default range 29400-30399 (internal_port 8102)
	addrOf := map[string]string{}
	for i, n := range nodes.Names {
		addrOf[n] = nodes.Addrs[i]
	}
	var hosts []string
	for rank, r := range ranks {
		hosts = append(hosts, r.Host)
		// apptainer's clean environment has no SLURM_* variables; the
		// node group's own NVFL_* ones below are what every rank needs.
		if sandbox != slurmtest.SandboxApptainer && r.Env["SLURMD_NODENAME"] != r.Host {
			t.Errorf("rank %d: host %s but SLURMD_NODENAME %s", rank, r.Host, r.Env["SLURMD_NODENAME"])
		}
		for name, want := range map[string]string{"NVFL_NODE_RANK": fmt.Sprint(rank), "NVFL_NNODES": "3",
			"NVFL_MASTER_ADDR": ranks[0].Host, "NVFL_MASTER_PORT": wantPort, "NVFL_RUN_ID": l.SlurmJobID, "S1_MODE": "node-group"} {
			if got := r.Env[name]; got != want {
				t.Errorf("rank %d: %s=%q, want %q", rank, name, got, want)
			}
		}
		wantCwd, wantSecret := path.Join(s.ws, "job-ng-ok", "app_site-1"), ""
		if rank == 0 {
			wantCwd, wantSecret = path.Join(s.ws, "job-ng-ok"), secret
		}
		if r.Cwd != wantCwd {
			t.Errorf("rank %d ran in %s, want %s", rank, r.Cwd, wantCwd)
		}
		if r.Env["DB_PASSWORD"] != wantSecret || (rank == 0) != (r.Env["NVFLARE_JOB_AUTH_TOKEN"] == token) {
			t.Errorf("rank %d: DB_PASSWORD=%q, auth token set %v; want the secrets on rank 0 only",
				rank, r.Env["DB_PASSWORD"], r.Env["NVFLARE_JOB_AUTH_TOKEN"] != "")
		}
		if rank > 0 {
			for name, val := range r.Env {
				if strings.Contains(val, secret) || strings.Contains(val, token) {
					t.Errorf("rank %d: %s holds a secret value", rank, name)
				}
			}
		}
	}
	sorted := append([]string(nil), hosts...)
	sort.Strings(sorted)
	if strings.Join(sorted, ",") != strings.Join(nodes.Names, ",") {
		t.Errorf("ranks ran on %v, want one on each of %v", hosts, nodes.Names)
	}
	if ranks[0].Host != nodes.Names[0] {
		t.Errorf("rank 0 (the worker, on the batch node) ran on %s, want %s", ranks[0].Host, nodes.Names[0])
	}
	wantRV := fmt.Sprintf("rank=1 run=%s from=%s\nrank=2 run=%s from=%s\n", l.SlurmJobID, addrOf[hosts[1]], l.SlurmJobID, addrOf[hosts[2]])
	if got := s.read(path.Join(s.ws, "job-ng-ok", "rendezvous.txt")); got != wantRV {
		t.Errorf("rank 0 saw\n%swant\n%s", got, wantRV)
	}
	for _, rank := range []int{1, 2} {
		want := fmt.Sprintf("welcome run=%s from=%s\n", l.SlurmJobID, ranks[0].Host)
		if got := s.read(path.Join(s.ws, "job-ng-ok", fmt.Sprintf("reply-%d.txt", rank))); got != want {
			t.Errorf("rank %d got %q from rank 0, want %q", rank, got, want)
		}
	}
	if out := s.slurmOut("job-ng-ok", l.SlurmJobID); strings.Contains(out, secret) || strings.Contains(out, token) {
		t.Error("a secret reached the job's output")
	}
	if s.exists(l.JobDir) {
		t.Error("job dir left behind after the end")
	}
}

// TestNodeGroupGPUs, per sandbox: a three-node node group with
// gpus_per_node 1 (sbatch --gres=gpu:1; the cluster's GPUs are stand-in
// devices) starts on every Slurm version of the matrix, every rank sees
// exactly one GPU in CUDA_VISIBLE_DEVICES (under apptainer through
// APPTAINERENV_, node.sh per rank), and the job succeeds. NVFlare's own
// multi-node GPU launch (upstream PR 5269) is what broke on Slurm 26.05.
func TestNodeGroupGPUs(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, func(t *testing.T, sandbox string) {
		s, _, _ := nodeGroupSite(t, sandbox)
		req, _ := s.nodeGroupJobWith("job-ng-gpu", "ok", map[string]any{"gpus_per_node": 1})
		l := s.launch(req)
		st := s.wait("job-ng-gpu", 5*time.Minute)
		if st.ReturnCode != 0 || st.State != "COMPLETED" {
			t.Fatalf("result %+v\njob output:\n%s", st, s.slurmOut("job-ng-gpu", l.SlurmJobID))
		}
		for rank, r := range s.ranks("job-ng-gpu") {
			if gpus := r.Env["CUDA_VISIBLE_DEVICES"]; gpus == "" || strings.Contains(gpus, ",") {
				t.Errorf("rank %d on %s: CUDA_VISIBLE_DEVICES=%q, want one GPU", rank, r.Host, gpus)
			}
		}
	})
}

// TestNodeGroupRankFailure: a non-zero exit on rank 2 ends the whole job
// (srun --kill-on-bad-exit) long before the other ranks' hold ends, with
// the failure result, in every sandbox.
func TestNodeGroupRankFailure(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	forEachSandbox(t, testNodeGroupRankFailure)
}

func testNodeGroupRankFailure(t *testing.T, sandbox string) {
	s, _, _ := nodeGroupSite(t, sandbox)
	req, _ := s.nodeGroupJob("job-ng-fail", "fail")
	l := s.launch(req)
	start := time.Now()
	st := s.wait("job-ng-fail", 5*time.Minute)
	if st.ReturnCode != 1 || st.State != "FAILED" {
		t.Fatalf("result %+v, want 1 and FAILED\njob output:\n%s", st, s.slurmOut("job-ng-fail", l.SlurmJobID))
	}
	s.ranks("job-ng-fail") // all three started
	for rank := 0; rank < 3; rank++ {
		if s.exists(path.Join(s.ws, "job-ng-fail", fmt.Sprintf("survived-%d", rank))) {
			t.Errorf("rank %d ran out its hold: the failure did not end the job", rank)
		}
	}
	t.Logf("failed job ended %v after launch (the other ranks hold for 240 s)", time.Since(start).Round(time.Second))
}

// TestNodeGroupCancel: cancelling a running node group ends the processes
// of all three ranks, and the result is aborted. (Sandbox none: a rank's
// pid inside apptainer's PID namespace is not this machine's.)
func TestNodeGroupCancel(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	s, _, _ := nodeGroupSite(t, "none")
	req, _ := s.nodeGroupJob("job-ng-cancel", "hold")
	l := s.launch(req)
	rv := path.Join(s.ws, "job-ng-cancel", "rendezvous.txt")
	deadline := time.Now().Add(4 * time.Minute)
	for !s.exists(rv) {
		if time.Now().After(deadline) {
			t.Fatalf("the ranks did not meet within 4 min; status %+v\njob output:\n%s", s.status("job-ng-cancel"), s.slurmOut("job-ng-cancel", l.SlurmJobID))
		}
		time.Sleep(500 * time.Millisecond)
	}
	ranks := s.ranks("job-ng-cancel")
	// The nodes share this machine's pid namespace, so a rank's pid can be
	// looked up here; the check before the cancel proves it.
	alive := func(r rankSeen) bool {
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.PID))
		return err == nil && strings.Contains(string(cmd), "rank.py")
	}
	for rank, r := range ranks {
		if !alive(r) {
			t.Fatalf("rank %d (pid %d) is not running before the cancel", rank, r.PID)
		}
	}
	out, errs, code := s.run(context.Background(), "cancel", "--workspace", s.ws, "--job-id", "job-ng-cancel")
	if code != 0 {
		t.Fatalf("cancel exit %d: %s %s", code, out, errs)
	}
	if st := s.wait("job-ng-cancel", 2*time.Minute); st.ReturnCode != 9 {
		t.Fatalf("result %+v, want 9 (aborted)", st)
	}
	deadline = time.Now().Add(60 * time.Second)
	for rank, r := range ranks {
		for alive(r) {
			if time.Now().After(deadline) {
				t.Fatalf("rank %d (pid %d on %s) still runs 60 s after the job ended", rank, r.PID, r.Host)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
