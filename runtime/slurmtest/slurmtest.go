// Package slurmtest gives integration tests a real Slurm cluster with accounting.
//
// The cluster is a Debian 13 root under chroot on this machine, started by
// cluster.sh in this directory (see README.md). Tests opt in with the
// environment variable FLARE_SLURM_IT=1; without it Require skips the test.
//
//	func TestSubmit(t *testing.T) {
//		c := slurmtest.Require(t)
//		dir := c.TempDir(t)                       // private dir of the test account, path inside the root
//		out, err := c.Command(context.Background(), "sbatch", "--version").CombinedOutput()
//		...
//	}
//
// Everything a test runs through Command executes inside the root as the
// dedicated non-root test account (see TestUser), with a minimal environment.
// RequireNodes gives multi-node tests the partition of three nodes that run in
// network namespaces of their own; NVFlareRoot and PythonCommand run the
// NVFlare source that cluster.sh copies into the root.
// The cluster is left running when the test process ends: `make test-slurm`
// stops it with `cluster.sh down`.
package slurmtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// EnvEnable is the variable that turns Slurm integration tests on ("1").
const EnvEnable = "FLARE_SLURM_IT"

// EnvScript overrides the location of cluster.sh.
const EnvScript = "FLARE_SLURM_CLUSTER_SH"

// upTimeout bounds `cluster.sh up`; a cold start (building the root, the
// worker image's root and the images) takes about five minutes on two busy
// cores, the rest is slack for a slow mirror.
const upTimeout = 20 * time.Minute

// lockWait bounds how long a test waits for its turn on the cluster (an
// exclusive user elsewhere, e.g. a fault-injection test in another package,
// or, for an exclusive user, the shared users already running: a federation
// test holds the cluster for up to 12 minutes).
const lockWait = 20 * time.Minute

// Cluster is the running test cluster. Paths named "in the root" are as the
// jobs see them; HostPath maps them to this machine's file system.
type Cluster struct {
	// Root is the host path of the chroot (the root's "/").
	Root string
	// ClusterName, Account, Partition and Node are the Slurm names in use:
	// Partition is the default partition, whose one node Node is the host
	// itself (NodeAddr 127.0.0.1). The multi-node partition is RequireNodes'.
	ClusterName, Account, Partition, Node string
	// LoginAddr is the host's address on the private node network, where
	// slurmctld, slurmdbd and whatever a test starts through Command (e.g. an
	// NVFlare parent listening on all addresses) are reachable from every node,
	// the host's own included; LoginHost is a name for it in the root's
	// /etc/hosts.
	LoginAddr, LoginHost string
	// TestUser is the non-root account that runs the runtime side of tests,
	// registered in accounting under Account; TestUID and TestGID are its IDs.
	TestUser         string
	TestUID, TestGID int
	// Home is the test account's home in the root (mode 0700).
	Home string
	// Workspace is a directory owned by the test account, mode 0700, inside
	// the root. Use TempDir for a fresh private directory below it.
	Workspace string
	// Path is the PATH that Command gives to processes in the root.
	Path string
	// SlurmVersion is the running cluster's Slurm release ("24.11", "26.05"),
	// chosen by FLARE_SLURM_VERSION (cluster.sh versions lists them).
	SlurmVersion string

	// ApptainerImage and PyxisImage are the worker image inside the root in
	// the two formats (SIF for apptainer, squashfs for pyxis+enroot): Python
	// with NVFlare's dependencies and NVFlare at NVFlareRoot's path. Tests of
	// the container sandboxes call RequireContainers first.
	ApptainerImage, PyxisImage string

	script    string
	exclusive bool
	// nvflareRoot, nvflareStamp: where cluster.sh copies the NVFlare source in
	// the root and its stamp; nvflareMissing says why there is no source.
	nvflareRoot, nvflareStamp, nvflareMissing string
	// containersMissing says why the root has no pyxis and enroot.
	containersMissing string
	// multi: the multi-node partition (see RequireNodes).
	multi Nodes
}

// Nodes is the multi-node part of the test cluster: a partition whose nodes
// each run their slurmd in a network namespace of their own, with their own
// address on a private bridge and their own host name, sharing the root as
// the shared file system. Jobs there reach each other, and the login side
// (LoginAddr), over that network only.
type Nodes struct {
	// Partition is the partition holding exactly Names.
	Partition string
	// Names are the node names (also each node's host name), in Slurm's
	// order: a job on all of them gets SLURM_NODEID 0, 1, ... in this order.
	Names []string
	// Addrs are the nodes' addresses on the node network, in the same order;
	// each Names[i] resolves to Addrs[i] in the root's /etc/hosts.
	Addrs []string
}

// RequireNodes is Require for tests that need a job on n separate nodes
// (1 <= n <= 3): it returns the cluster and its multi-node partition. The
// partition always holds all its nodes (three), whatever n is. The nodes run
// whenever the cluster runs, so asking costs nothing more than Require.
func RequireNodes(t testing.TB, n int) (*Cluster, Nodes) {
	t.Helper()
	c := require(t, false)
	return c, c.MultiNodes(t, n)
}

// MultiNodes is RequireNodes' answer for a cluster the test already holds
// (e.g. from RequireExclusive): the multi-node partition, which must have at
// least n nodes.
func (c *Cluster) MultiNodes(t testing.TB, n int) Nodes {
	t.Helper()
	if n < 1 || n > len(c.multi.Names) {
		t.Fatalf("slurmtest: %d nodes asked for: the test cluster's partition %s has %d nodes (%s)",
			n, c.multi.Partition, len(c.multi.Names), strings.Join(c.multi.Names, ","))
	}
	return Nodes{
		Partition: c.multi.Partition,
		Names:     append([]string(nil), c.multi.Names...),
		Addrs:     append([]string(nil), c.multi.Addrs...),
	}
}

var (
	upOnce sync.Once
	upErr  error
	upMu   sync.Mutex // guards upEnv
	upEnv  map[string]string
)

// Require returns the cluster, starting it on first use in this process.
// Without FLARE_SLURM_IT=1 it skips the test. With it, a cluster that cannot
// start fails the test: it never skips. While the test runs it holds shared
// use of the cluster, so no exclusive (fault-injection) test runs meanwhile.
func Require(t testing.TB) *Cluster {
	t.Helper()
	return require(t, false)
}

// RequireExclusive is Require for tests that break the cluster on purpose
// (StopCtld, StopDbd, ...): it waits until no other test, in this or any
// other test process, is using the cluster, and keeps everyone else waiting
// until the test ends. At the end it restarts whatever the test stopped.
// Do not call it inside a test (or a subtest of one) that called Require.
func RequireExclusive(t testing.TB) *Cluster {
	t.Helper()
	return require(t, true)
}

func require(t testing.TB, exclusive bool) *Cluster {
	t.Helper()
	if os.Getenv(EnvEnable) != "1" {
		t.Skipf("Slurm integration test: set %s=1 to run it against the local Slurm test cluster "+
			"(needs root; runtime/slurmtest/cluster.sh starts it)", EnvEnable)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("slurmtest: %s=1 needs root: the Slurm test cluster runs under chroot (run as root, or unset %s)", EnvEnable, EnvEnable)
	}
	script, err := scriptPath()
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	env, err := clusterEnv(script)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if err := os.MkdirAll(env["STATE"], 0o755); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	// Take our turn first, so a start below never undoes an exclusive user's fault.
	start := time.Now()
	lockUse(t, env["STATE"], exclusive)
	if d := time.Since(start); d > time.Second {
		t.Logf("slurmtest: waited %v for the cluster", d.Round(time.Millisecond))
	}

	upOnce.Do(func() {
		start := time.Now()
		upErr = runScript(script, upTimeout, "up")
		t.Logf("slurmtest: cluster.sh up took %v", time.Since(start).Round(time.Millisecond))
	})
	if upErr != nil {
		t.Fatalf("slurmtest: the Slurm test cluster did not start (%s=1 requires it): %v", EnvEnable, upErr)
	}
	c, err := newCluster(script, env)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if exclusive {
		c.exclusive = true
		// Whatever an earlier exclusive user left stopped, start it now; and
		// restore the cluster before the lock is released (cleanups run LIFO).
		if err := runScript(script, upTimeout, "up"); err != nil {
			t.Fatalf("slurmtest: the Slurm test cluster is not healthy: %v", err)
		}
		t.Cleanup(func() {
			if err := runScript(script, upTimeout, "up"); err != nil {
				t.Errorf("slurmtest: restoring the cluster after an exclusive test: %v", err)
			}
		})
	}
	return c
}

// lockUse takes shared or exclusive use of the cluster until the test ends:
// a flock on STATE/use.lock, shared or exclusive. Exclusive users go first:
// one that waits holds STATE/use.turnstile, which every new shared user must
// pass (take shared and let go) before it takes use.lock, so a stream of
// overlapping shared users (a long package of parallel tests) cannot starve
// an exclusive one in another test process; the shared users already
// running finish first.
func lockUse(t testing.TB, state string, exclusive bool) {
	t.Helper()
	turnstile := openLock(t, filepath.Join(state, "use.turnstile"))
	defer turnstile.Close()
	use := openLock(t, filepath.Join(state, "use.lock"))
	t.Cleanup(func() { use.Close() })
	deadline := time.Now().Add(lockWait)
	if exclusive {
		flockUntil(t, turnstile, unix.LOCK_EX, deadline)
		flockUntil(t, use, unix.LOCK_EX, deadline)
	} else {
		flockUntil(t, turnstile, unix.LOCK_SH, deadline)
		flockUntil(t, use, unix.LOCK_SH, deadline)
	}
	// Closing the turnstile (deferred) lets it go.
}

func openLock(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	return f
}

// flockUntil takes the flock how on f, retrying until deadline.
func flockUntil(t testing.TB, f *os.File, how int, deadline time.Time) {
	t.Helper()
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			t.Fatalf("slurmtest: locking %s: %v", f.Name(), err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmtest: waited %v for the Slurm test cluster (%s); "+
				"is a test holding Require while a subtest asks for RequireExclusive?", lockWait, f.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scriptPath finds cluster.sh: $FLARE_SLURM_CLUSTER_SH, beside this source
// file, or runtime/slurmtest/cluster.sh in the module containing the working
// directory (for binaries built with -trimpath).
func scriptPath() (string, error) {
	if p := os.Getenv(EnvScript); p != "" {
		return p, nil
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(file), "cluster.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "runtime", "slurmtest", "cluster.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cannot find runtime/slurmtest/cluster.sh; set %s", EnvScript)
		}
		dir = parent
	}
}

// runScript runs `bash cluster.sh ARGS...`, failing with its output.
func runScript(script string, timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// The daemons it starts get their own stdio; this only guards against a
	// stray child keeping our pipe open.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func clusterEnv(script string) (map[string]string, error) {
	upMu.Lock()
	defer upMu.Unlock()
	if upEnv != nil {
		return upEnv, nil
	}
	out, err := exec.Command("bash", script, "env").Output()
	if err != nil {
		return nil, fmt.Errorf("cluster.sh env: %v", err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	for _, k := range []string{"ROOT", "STATE", "TEST_USER", "TEST_UID", "TEST_GID", "TEST_HOME", "TEST_WS", "PATH_IN_ROOT",
		"NVFLARE_ROOT", "NVFLARE_STAMP", "MULTI_PARTITION", "MULTI_NODES", "MULTI_ADDRS", "LOGIN_ADDR", "LOGIN_HOST",
		"SLURM_VERSION", "APPTAINER_IMAGE", "PYXIS_IMAGE"} {
		if env[k] == "" {
			return nil, fmt.Errorf("cluster.sh env: no %s in %q", k, out)
		}
	}
	upEnv = env
	return env, nil
}

func newCluster(script string, env map[string]string) (*Cluster, error) {
	uid, err := strconv.Atoi(env["TEST_UID"])
	if err != nil {
		return nil, fmt.Errorf("cluster.sh env: TEST_UID: %v", err)
	}
	gid, err := strconv.Atoi(env["TEST_GID"])
	if err != nil {
		return nil, fmt.Errorf("cluster.sh env: TEST_GID: %v", err)
	}
	names := strings.Split(env["MULTI_NODES"], ",")
	addrs := strings.Split(env["MULTI_ADDRS"], ",")
	if len(names) != len(addrs) {
		return nil, fmt.Errorf("cluster.sh env: MULTI_NODES %q and MULTI_ADDRS %q differ in length", env["MULTI_NODES"], env["MULTI_ADDRS"])
	}
	return &Cluster{
		Root:        env["ROOT"],
		ClusterName: env["CLUSTER"],
		Account:     env["ACCOUNT"],
		Partition:   env["PARTITION"],
		Node:        env["NODE"],
		TestUser:    env["TEST_USER"],
		TestUID:     uid,
		TestGID:     gid,
		Home:        env["TEST_HOME"],
		Workspace:   env["TEST_WS"],
		Path:        env["PATH_IN_ROOT"],
		LoginAddr:   env["LOGIN_ADDR"],
		LoginHost:   env["LOGIN_HOST"],
		script:      script,

		SlurmVersion:      env["SLURM_VERSION"],
		ApptainerImage:    env["APPTAINER_IMAGE"],
		PyxisImage:        env["PYXIS_IMAGE"],
		containersMissing: env["CONTAINERS_MISSING"],

		multi: Nodes{Partition: env["MULTI_PARTITION"], Names: names, Addrs: addrs},

		nvflareRoot:    env["NVFLARE_ROOT"],
		nvflareStamp:   env["NVFLARE_STAMP"],
		nvflareMissing: env["NVFLARE_MISSING"],
	}, nil
}

// HostPath maps an absolute path inside the root to the host path.
func (c *Cluster) HostPath(rootPath string) string {
	if !filepath.IsAbs(rootPath) {
		panic(fmt.Sprintf("slurmtest: HostPath needs an absolute path inside the root, got %q", rootPath))
	}
	return filepath.Join(c.Root, filepath.Clean(rootPath))
}

// RootPath maps a host path below Root to the path inside the root.
func (c *Cluster) RootPath(hostPath string) (string, error) {
	rel, err := filepath.Rel(c.Root, filepath.Clean(hostPath))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("slurmtest: %s is not inside the root %s", hostPath, c.Root)
	}
	return filepath.Join("/", rel), nil
}

// Env is the minimal environment Command gives the test account.
func (c *Cluster) Env() []string {
	return []string{
		"HOME=" + c.Home,
		"USER=" + c.TestUser,
		"LOGNAME=" + c.TestUser,
		"SHELL=/bin/bash",
		"PATH=" + c.Path,
	}
}

// Command prepares name with args to run inside the root as the test account
// (not root), in Home, with Env() as its environment. name is an absolute path
// inside the root or a command looked up in the root's PATH. The caller may set
// Dir (a path inside the root), append to Env, set Stdin/Stdout/Stderr, and
// then Run it like any exec.Cmd.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return c.command(ctx, c.TestUID, c.TestGID, c.Home, c.Env(), name, args)
}

// RootCommand is Command as root inside the root, for setup and inspection
// (scontrol, sacctmgr, ...). The runtime under test must run through Command.
func (c *Cluster) RootCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	env := []string{"HOME=/root", "USER=root", "LOGNAME=root", "PATH=" + c.Path}
	return c.command(ctx, 0, 0, "/", env, name, args)
}

func (c *Cluster) command(ctx context.Context, uid, gid int, dir string, env []string, name string, args []string) *exec.Cmd {
	path := name
	var lookErr error
	if !strings.Contains(name, "/") {
		path, lookErr = c.lookPath(name)
	}
	// The path is inside the root: exec.Command must not look it up on the host.
	cmd := exec.CommandContext(ctx, "/", args...)
	cmd.Path = path
	cmd.Args = append([]string{name}, args...)
	cmd.Err = lookErr
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     c.Root,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}},
		Setsid:     true,
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (c *Cluster) lookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(c.Path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(c.HostPath(p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("slurmtest: %q not found in the root's PATH %s", name, c.Path)
}

// Run runs Command(name, args...) and returns its stdout; a failure (or a
// non-zero exit) fails the test with stdout and stderr.
func (c *Cluster) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	return c.run(t, c.Command(context.Background(), name, args...))
}

// RunRoot is Run as root inside the root.
func (c *Cluster) RunRoot(t testing.TB, name string, args ...string) string {
	t.Helper()
	return c.run(t, c.RootCommand(context.Background(), name, args...))
}

func (c *Cluster) run(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("slurmtest: %s: %v\nstdout: %s\nstderr: %s", strings.Join(cmd.Args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TempDir creates a fresh directory below Workspace, owned by the test account
// with mode 0700, removed when the test ends. It returns the path inside the root.
func (c *Cluster) TempDir(t testing.TB) string {
	t.Helper()
	host, err := os.MkdirTemp(c.HostPath(c.Workspace), sanitize(t.Name())+"-")
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if err := os.Chown(host, c.TestUID, c.TestGID); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if err := os.Chmod(host, 0o700); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLARE_SLURM_KEEP") == "" {
			os.RemoveAll(host)
		}
	})
	p, err := c.RootPath(host)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// Mkdir creates rootPath (and missing parents) inside the root, owned by the
// test account with the given mode.
func (c *Cluster) Mkdir(t testing.TB, rootPath string, mode os.FileMode) {
	t.Helper()
	var missing []string
	for p := c.HostPath(rootPath); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
		if err := os.Chown(p, c.TestUID, c.TestGID); err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
	}
}

// WriteFile writes data to rootPath inside the root, owned by the test account.
func (c *Cluster) WriteFile(t testing.TB, rootPath string, data []byte, mode os.FileMode) {
	t.Helper()
	c.install(t, rootPath, bytes.NewReader(data), mode)
}

// CopyIn copies the host file hostSrc to rootDst inside the root, owned by the
// test account, keeping the source's permission bits. Parent directories must
// exist (see Mkdir, TempDir). Use it for statically built binaries
// (CGO_ENABLED=0), e.g. the CLI or a test helper.
func (c *Cluster) CopyIn(t testing.TB, hostSrc, rootDst string) {
	t.Helper()
	f, err := os.Open(hostSrc)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	c.install(t, rootDst, f, fi.Mode().Perm())
}

func (c *Cluster) install(t testing.TB, rootDst string, r io.Reader, mode os.FileMode) {
	t.Helper()
	dst := c.HostPath(rootDst)
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".slurmtest-*")
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	_, err = io.Copy(tmp, r)
	if err == nil {
		err = tmp.Chown(c.TestUID, c.TestGID)
	}
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		t.Fatalf("slurmtest: writing %s: %v", rootDst, err)
	}
}

// python is the interpreter of the root (Debian 13: Python 3.13), with
// NVFlare's dependencies installed as Debian packages (cluster.sh PACKAGES).
const python = "/usr/bin/python3"

// NVFlareRoot returns the path inside the root of the NVFlare source tree that
// `cluster.sh up` copies in (root-owned, read-only to the test account, byte
// code compiled): the PYTHONPATH entry for `import nvflare`. When cluster.sh
// found no source it fails the test, saying where it looked and what to set.
func (c *Cluster) NVFlareRoot(t testing.TB) string {
	t.Helper()
	_, errStamp := os.Stat(c.HostPath(c.nvflareStamp))
	_, errTree := os.Stat(c.HostPath(filepath.Join(c.nvflareRoot, "nvflare", "__init__.py")))
	if errStamp != nil || errTree != nil {
		why := c.nvflareMissing
		if why == "" {
			why = "the copy is incomplete; run runtime/slurmtest/cluster.sh up"
		}
		t.Fatalf("slurmtest: NVFlare is not in the cluster root (%s): %s", c.nvflareRoot, why)
	}
	return c.nvflareRoot
}

// PythonEnv is Env() plus PYTHONPATH=NVFlareRoot: the environment in which
// the test account runs NVFlare's Python inside the root.
func (c *Cluster) PythonEnv(t testing.TB) []string {
	t.Helper()
	return append(c.Env(), "PYTHONPATH="+c.NVFlareRoot(t))
}

// PythonCommand prepares `python3 ARGS...` inside the root as the test account
// with PythonEnv (NVFlare importable), like Command: set Dir, append to Env,
// Start or Run it. It fails the test when NVFlare is not in the root.
func (c *Cluster) PythonCommand(ctx context.Context, t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	cmd := c.Command(ctx, python, args...)
	cmd.Env = c.PythonEnv(t)
	return cmd
}

// RunPython runs PythonCommand(args...) and returns its stdout; a failure
// fails the test with stdout and stderr.
func (c *Cluster) RunPython(t testing.TB, args ...string) string {
	t.Helper()
	return c.run(t, c.PythonCommand(context.Background(), t, args...))
}

// StopCtld stops slurmctld (the scheduler stops answering). Exclusive tests only.
func (c *Cluster) StopCtld(t testing.TB) { c.fault(t, "stop-ctld") }

// StartCtld starts slurmctld again and waits until the node is back.
func (c *Cluster) StartCtld(t testing.TB) { c.fault(t, "start-ctld") }

// StopDbd stops slurmdbd (sacct stops answering). Exclusive tests only.
func (c *Cluster) StopDbd(t testing.TB) { c.fault(t, "stop-dbd") }

// StartDbd starts slurmdbd again and waits until sacct answers.
func (c *Cluster) StartDbd(t testing.TB) { c.fault(t, "start-dbd") }

func (c *Cluster) fault(t testing.TB, what string) {
	t.Helper()
	if !c.exclusive {
		t.Fatalf("slurmtest: %s needs a cluster from RequireExclusive: other tests share this one", what)
	}
	start := time.Now()
	if err := runScript(c.script, upTimeout, what); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	t.Logf("slurmtest: cluster.sh %s took %v", what, time.Since(start).Round(time.Millisecond))
}

func sanitize(name string) string {
	b := []byte(name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

// Sandbox names the container runtimes of the test cluster, as slurm.yaml's
// sandbox key spells them.
const (
	SandboxApptainer = "apptainer"
	SandboxPyxis     = "pyxis"
)

// RequireContainers fails the test unless the root holds the real container
// runtime of sandbox (apptainer, or pyxis with enroot) and its worker image,
// and returns that image's path inside the root. There are no stand-ins: a
// root built without the pinned enroot and pyxis sources cannot run the pyxis
// tests, and says so.
func (c *Cluster) RequireContainers(t testing.TB, sandbox string) string {
	t.Helper()
	var image string
	var need []string
	switch sandbox {
	case SandboxApptainer:
		image, need = c.ApptainerImage, []string{"/usr/bin/apptainer"}
	case SandboxPyxis:
		if c.containersMissing != "" {
			t.Fatalf("slurmtest: the pyxis sandbox cannot run on this cluster: %s", c.containersMissing)
		}
		image, need = c.PyxisImage, []string{"/usr/local/bin/enroot", "/usr/local/lib/slurm/spank_pyxis.so", "/etc/slurm/plugstack.conf"}
	default:
		t.Fatalf("slurmtest: no container runtime %q (want %s or %s)", sandbox, SandboxApptainer, SandboxPyxis)
	}
	for _, p := range append(need, image) {
		if _, err := os.Stat(c.HostPath(p)); err != nil {
			t.Fatalf("slurmtest: the %s sandbox cannot run: %s is missing in the cluster root (%v); run runtime/slurmtest/cluster.sh up", sandbox, p, err)
		}
	}
	return image
}

// SlurmAtLeast reports whether the cluster's Slurm release is release
// ("YY.MM", e.g. "26.05") or newer, for tests whose expectation a Slurm
// release changed.
func (c *Cluster) SlurmAtLeast(release string) bool {
	return releaseKey(c.SlurmVersion) >= releaseKey(release)
}

// releaseKey orders "YY.MM" releases: YY*100 + MM, or -1 when malformed.
func releaseKey(release string) int {
	y, m, ok := strings.Cut(release, ".")
	yy, err1 := strconv.Atoi(y)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || mm < 1 || mm > 12 {
		return -1
	}
	return yy*100 + mm
}
