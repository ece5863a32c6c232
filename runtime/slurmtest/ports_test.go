package slurmtest

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPortsFree: cluster.sh ports-free (and so can-run, and make test)
// fails naming the port when another program listens on a port the
// cluster needs, and passes once it is free. No cluster is involved.
func TestPortsFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	check := func() (string, error) {
		cmd := exec.Command("bash", "cluster.sh", "ports-free")
		cmd.Env = append(os.Environ(), "FLARE_SLURM_CHECK_PORTS="+port+":slurmctld", "FLARE_SLURM_STATE="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := check()
	if err == nil {
		t.Fatalf("ports-free passed with port %s in use:\n%s", port, out)
	}
	if want := "127.0.0.1 port(s) " + port + " in use by another program"; !strings.Contains(out, want) {
		t.Errorf("ports-free said %q, want it to contain %q", out, want)
	}
	l.Close()
	if out, err := check(); err != nil {
		t.Errorf("ports-free failed with port %s free: %v\n%s", port, err, out)
	}
}
