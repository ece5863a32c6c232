package slurmtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// minCryptography is the oldest cryptography NVFlare's source accepts
// (x509.verification.ExtensionPolicy); Debian 13 itself ships 43.
const minCryptography = 45

// TestNVFlareInRoot: the pinned NVFlare source imports inside the root as the
// test account, with a cryptography new enough for it, and the tree cannot be
// changed by that account.
func TestNVFlareInRoot(t *testing.T) {
	c := slurmtest.Require(t)
	root := c.NVFlareRoot(t)

	out := c.RunPython(t, "-c", `
import nvflare, cryptography
from cryptography.x509.verification import ExtensionPolicy
from nvflare.fuel.flare_api.flare_api import new_secure_session
print(nvflare.__file__)
print(cryptography.__version__)
`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("python printed %q, want two lines", out)
	}
	if want := path.Join(root, "nvflare", "__init__.py"); lines[0] != want {
		t.Errorf("nvflare imported from %s, want %s (the tree cluster.sh copies in)", lines[0], want)
	}
	major, err := strconv.Atoi(strings.SplitN(lines[1], ".", 2)[0])
	if err != nil || major < minCryptography {
		t.Errorf("cryptography %q in the root, want >= %d", lines[1], minCryptography)
	}

	probe := path.Join(root, "nvflare", "flare-slurm-write-probe")
	if err := c.Command(context.Background(), "touch", probe).Run(); err == nil {
		os.Remove(c.HostPath(probe))
		t.Errorf("the test account could create %s: the NVFlare tree must be read-only to it", probe)
	}
}

// TestNVFlareServerParent provisions NVFlare's dummy project (with a free
// port) as the test account and starts the server parent the way its
// startup kit does; it must listen within a deadline and stop on SIGTERM
// without leaving a process behind or its port open.
func TestNVFlareServerParent(t *testing.T) {
	c := slurmtest.Require(t)
	root := c.NVFlareRoot(t)
	dir := c.TempDir(t)

	port := freePort(t)
	project, err := os.ReadFile(c.HostPath(path.Join(root, "nvflare", "lighter", "dummy_project.yml")))
	if err != nil {
		t.Fatal(err)
	}
	const portLine = "fed_learn_port: 8002"
	if n := bytes.Count(project, []byte(portLine)); n != 1 {
		t.Fatalf("dummy_project.yml holds %q %d times, want once", portLine, n)
	}
	project = bytes.Replace(project, []byte(portLine), []byte("fed_learn_port: "+strconv.Itoa(port)), 1)
	c.WriteFile(t, path.Join(dir, "project.yml"), project, 0o600)

	prov := c.PythonCommand(context.Background(), t, "-m", "nvflare.lighter.provision",
		"-p", path.Join(dir, "project.yml"), "-w", path.Join(dir, "prov"))
	prov.Dir = dir
	if b, err := prov.CombinedOutput(); err != nil {
		t.Fatalf("provision: %v\n%s", err, b)
	}
	kit := path.Join(dir, "prov", "example_project", "prod_00", "server1")
	if _, err := os.Stat(c.HostPath(path.Join(kit, "startup", "fed_server.json"))); err != nil {
		t.Fatalf("provision wrote no server kit: %v", err)
	}

	// The command of the kit's startup/sub_start.sh.
	var logBuf bytes.Buffer
	srv := c.PythonCommand(context.Background(), t, "-u", "-m", "nvflare.private.fed.app.server.server_train",
		"-m", kit, "-s", "fed_server.json", "--set", "secure_train=true", "config_folder=config", "org=nvidia")
	srv.Dir = kit
	srv.Stdout, srv.Stderr = &logBuf, &logBuf
	if err := srv.Start(); err != nil {
		t.Fatalf("starting the server parent: %v", err)
	}
	pgid := srv.Process.Pid // Command makes it a session (and group) leader
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	dump := func() string {
		b, _ := os.ReadFile(c.HostPath(path.Join(kit, "log.txt")))
		return fmt.Sprintf("output:\n%s\nlog.txt:\n%s", logBuf.String(), b)
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the server parent exited (%v) before listening on %s\n%s", err, addr, dump())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server parent did not listen on %s within 60 s\n%s", addr, dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the server parent listens on %s after %v", addr, time.Since(start).Round(time.Millisecond))

	// NVFlare's parent has no SIGTERM handler: the signal ends it.
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM to the server parent's group: %v", err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("the server parent ended with %v, want the SIGTERM it was sent\n%s", err, dump())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the server parent ignored SIGTERM for 30 s\n%s", dump())
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("processes of the server parent's group remain after it ended (kill -0: %v)", err)
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after the server parent ended", addr)
	}
}

// freePort returns a TCP port nothing listens on at the moment. The cluster
// shares the host's network, so the port is free inside the root too.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
