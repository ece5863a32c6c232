package slurmtest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// rankScript runs once per node (one srun task each). Every rank records
// where it runs; rank 0 listens on its node's address and ranks 1 and 2
// connect to it there, as node groups' NVFL_MASTER_ADDR/PORT rendezvous does.
const rankScript = `import os, socket, sys, time

rank = int(os.environ["SLURM_NODEID"])
me = os.environ["SLURMD_NODENAME"]
master, port, peers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
default_route = any(l.split()[1] == "00000000" for l in open("/proc/net/route").readlines()[1:])
with open(f"rank-{rank}.txt", "w") as f:
    print(f"node={me} host={socket.gethostname()} addr={socket.gethostbyname(socket.gethostname())} "
          f"default_route={default_route}", file=f)

deadline = time.monotonic() + 60
if rank == 0:
    srv = socket.create_server((master, port))
    srv.settimeout(60)
    got = []
    for _ in range(peers):
        conn, peer = srv.accept()
        with conn:
            msg = conn.makefile().readline().strip()
            conn.sendall(f"welcome from {me}\n".encode())
        got.append(f"{msg} from={peer[0]}")
    with open("rendezvous.txt", "w") as f:
        print("\n".join(sorted(got)), file=f)
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
        conn.sendall(f"rank={rank} node={me}\n".encode())
        reply = conn.makefile().readline().strip()
    with open(f"reply-{rank}.txt", "w") as f:
        print(reply, file=f)
`

// TestMultiNodeJob: a --nodes=3 batch job in the multi-node partition runs
// one srun task on each node (three node names, each its own host name and
// address, no default route), and ranks 1 and 2 reach rank 0 over TCP at
// rank 0's address on the node network.
func TestMultiNodeJob(t *testing.T) {
	c, nodes := slurmtest.RequireNodes(t, 3)
	if len(nodes.Names) != 3 {
		t.Fatalf("partition %s has nodes %v, want 3", nodes.Partition, nodes.Names)
	}
	dir := c.TempDir(t)
	c.WriteFile(t, path.Join(dir, "rank.py"), []byte(rankScript), 0o600)
	c.WriteFile(t, path.Join(dir, "batch.sh"), []byte(`#!/bin/bash
set -euo pipefail
port=$((20000 + SLURM_JOB_ID % 20000))
srun --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1 python3 rank.py "$SLURMD_NODENAME" "$port" 2
`), 0o700)

	name := "multinode-" + strings.ReplaceAll(filepath.Base(dir), "_", "-")
	id := strings.TrimSpace(c.Run(t, "sbatch", "--parsable", "--partition="+nodes.Partition,
		"--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--time=5", "--job-name="+name,
		"--chdir="+dir, "--output="+dir+"/slurm-%j.out", path.Join(dir, "batch.sh")))
	t.Cleanup(func() { c.Command(context.Background(), "scancel", id).Run() })
	out := func() string {
		b, _ := os.ReadFile(c.HostPath(path.Join(dir, "slurm-"+id+".out")))
		return string(b)
	}

	row := waitSacct(t, c, job{id: id, name: name})
	if want := fmt.Sprintf("%s|%s|%s|COMPLETED|0:0|0:0", id, name, c.TestUser); row != want {
		t.Fatalf("sacct row = %q, want %q\njob output:\n%s", row, want, out())
	}
	nodeList := strings.TrimSpace(c.Run(t, "sacct", "-X", "-n", "-P", "--jobs="+id, "--format=NodeList"))
	hosts := strings.Fields(c.Run(t, "scontrol", "show", "hostnames", nodeList))
	if strings.Join(hosts, ",") != strings.Join(nodes.Names, ",") {
		t.Errorf("sacct says the job ran on %q (%v), want %v", nodeList, hosts, nodes.Names)
	}

	read := func(name string) string {
		b, err := os.ReadFile(c.HostPath(path.Join(dir, name)))
		if err != nil {
			t.Fatalf("%v\njob output:\n%s", err, out())
		}
		return strings.TrimSpace(string(b))
	}
	var seen []string
	for rank, node := range nodes.Names {
		got := read(fmt.Sprintf("rank-%d.txt", rank))
		want := fmt.Sprintf("node=%s host=%s addr=%s default_route=False", node, node, nodes.Addrs[rank])
		if got != want {
			t.Errorf("rank %d recorded %q, want %q", rank, got, want)
		}
		seen = append(seen, strings.TrimPrefix(strings.Fields(got)[0], "node="))
	}
	sort.Strings(seen)
	if strings.Join(seen, ",") != strings.Join(nodes.Names, ",") {
		t.Errorf("the three ranks ran on %v, want one on each of %v", seen, nodes.Names)
	}

	wantRV := fmt.Sprintf("rank=1 node=%s from=%s\nrank=2 node=%s from=%s",
		nodes.Names[1], nodes.Addrs[1], nodes.Names[2], nodes.Addrs[2])
	if got := read("rendezvous.txt"); got != wantRV {
		t.Errorf("rank 0 saw connections\n%s\nwant\n%s", got, wantRV)
	}
	for _, rank := range []int{1, 2} {
		if got, want := read(fmt.Sprintf("reply-%d.txt", rank)), "welcome from "+nodes.Names[0]; got != want {
			t.Errorf("rank %d got reply %q from rank 0, want %q", rank, got, want)
		}
	}
}

// TestClusterNodeNetwork: the node network's life cycle. A node daemon that
// dies is brought back by `up`; `down` removes every namespace, veth and the
// bridge, and again after that does nothing; `up` without the right to create
// network devices refuses with the reason; `up` then starts everything again.
func TestClusterNodeNetwork(t *testing.T) {
	c := slurmtest.RequireExclusive(t)
	nodes := c.MultiNodes(t, 3)
	script := os.Getenv(slurmtest.EnvScript)
	if script == "" {
		script = "cluster.sh"
	}
	cluster := func(prefix []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		argv := append(append(prefix, "bash", script), args...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		return b.String(), err
	}
	mustCluster := func(args ...string) {
		t.Helper()
		if out, err := cluster(nil, args...); err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	netState := func() string {
		var b strings.Builder
		for _, argv := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}} {
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			b.Write(out)
		}
		return b.String()
	}
	ours := func(state string) []string {
		var found []string
		for _, l := range strings.Split(state, "\n") {
			if strings.Contains(l, "flare-slurm-") || strings.Contains(l, "flslurm") {
				found = append(found, strings.TrimSpace(l))
			}
		}
		return found
	}
	if got := ours(netState()); len(got) != 2*len(nodes.Names)+1 {
		t.Fatalf("with the cluster up, want %d namespaces and %d links (veths and the bridge); found %d:\n%s",
			len(nodes.Names), len(nodes.Names)+1, len(got), strings.Join(got, "\n"))
	}

	// A node's slurmd crashes: up brings the node back.
	env, err := cluster(nil, "env")
	if err != nil {
		t.Fatalf("cluster.sh env: %v\n%s", err, env)
	}
	state := ""
	for _, l := range strings.Split(env, "\n") {
		if v, ok := strings.CutPrefix(l, "STATE="); ok {
			state = v
		}
	}
	pid, err := os.ReadFile(filepath.Join(state, "slurmd-"+nodes.Names[1]+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("kill", "-KILL", strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
		t.Fatalf("kill: %v\n%s", err, out)
	}
	mustCluster("up")
	if out, err := cluster(nil, "status"); err != nil || !strings.Contains(out, "cluster is up") {
		t.Fatalf("status after up after a node crash: %v\n%s", err, out)
	}

	mustCluster("down")
	if got := ours(netState()); len(got) != 0 {
		t.Errorf("down left network state behind:\n%s", strings.Join(got, "\n"))
	}
	mustCluster("down")

	// Without CAP_NET_ADMIN no bridge can be made: up must say so and fail.
	out, err := cluster([]string{"setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin"}, "up")
	if err == nil || !strings.Contains(out, "cannot create the node network") || !strings.Contains(out, "CAP_NET_ADMIN") {
		t.Errorf("up without CAP_NET_ADMIN: err %v, want a refusal naming the node network and CAP_NET_ADMIN:\n%s", err, out)
	}
	if got := ours(netState()); len(got) != 0 {
		t.Errorf("a refused up left network state behind:\n%s", strings.Join(got, "\n"))
	}

	mustCluster("up")
	if got := ours(netState()); len(got) != 2*len(nodes.Names)+1 {
		t.Errorf("after up again: found\n%s", strings.Join(got, "\n"))
	}
	c.Run(t, "sinfo", "-h", "-p", nodes.Partition)
}
