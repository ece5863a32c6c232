package bridge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/internal/bridge"
	"github.com/flare-slurm/flare-slurm/internal/nvflaresrc"
	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

// TestBridgePython runs the bridge's Python unit tests
// (testdata/test_flare_slurm_bridge.py) against NVFlare's own launcher
// interface from the pinned source (internal/nvflaresrc: NVFLARE_SRC, else
// shared/nvflare above the checkout, else the machines' /work/shared/nvflare). The interpreter is NVFLARE_PYTHON, else the first of
// python3 on PATH and /usr/bin/python3 that imports that interface (it
// needs msgpack: Debian's python3-msgpack). Without one the test skips,
// except under CI=true, where it fails.
func TestBridgePython(t *testing.T) {
	t.Parallel() // a Python process of its own
	src := nvflaresrc.Dir()
	py, why := interpreter(t, src)
	if py == "" {
		testenv.Unavailable(t, "the bridge's Python tests cannot run: %s (set NVFLARE_PYTHON, NVFLARE_SRC)", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", "testdata/test_flare_slurm_bridge.py")
	cmd.Env = append(os.Environ(), "PYTHONPATH=.", "NVFLARE_SRC="+src, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s\n%s", py, out)
	if err != nil {
		t.Fatalf("python unit tests failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^Ran [1-9][0-9]* tests`).Match(out) || !bytes.Contains(out, []byte("\nOK")) {
		t.Fatal("the unit tests did not report OK")
	}
}

// TestBridgeTyped: the module's annotations are complete and consistent
// (mypy --strict; NVFlare's classes, untyped, count as Any). Without mypy
// the test skips, except under CI=true, where it fails (.ci/run installs
// Debian's mypy).
func TestBridgeTyped(t *testing.T) {
	t.Parallel() // a mypy process of its own
	mypy, err := exec.LookPath("mypy")
	if err != nil {
		testenv.Unavailable(t, "mypy is not installed (Debian: apt-get install mypy)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mypy, "--strict", "--allow-subclassing-any", "--ignore-missing-imports",
		"--no-incremental", "--cache-dir", t.TempDir(), "flare_slurm_bridge.py")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mypy --strict flare_slurm_bridge.py: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// nvflareProbe imports what the bridge imports, bypassing nvflare/__init__.py
// like the unit tests do.
const nvflareProbe = `
import os, sys, types
m = types.ModuleType("nvflare"); m.__path__ = [os.path.join(sys.argv[1], "nvflare")]; sys.modules["nvflare"] = m
import nvflare.apis.job_launcher_spec, nvflare.apis.event_type, nvflare.apis.fl_context
`

// found is interpreter's answer, probed once per test binary (a start of
// Python with NVFlare's modules is most of a probe's cost).
var found struct {
	once    sync.Once
	py, why string
}

// interpreter is the python3 that imports NVFlare's launcher interface
// from src, or "" and why there is none.
func interpreter(t *testing.T, src string) (string, string) {
	found.once.Do(func() { found.py, found.why = probeInterpreter(src) })
	return found.py, found.why
}

func probeInterpreter(src string) (string, string) {
	if _, err := os.Stat(filepath.Join(src, "nvflare", "apis", "job_launcher_spec.py")); err != nil {
		return "", "no NVFlare source at " + src
	}
	var candidates []string
	if p := os.Getenv("NVFLARE_PYTHON"); p != "" {
		candidates = []string{p}
	} else {
		if p, err := exec.LookPath("python3"); err == nil {
			candidates = append(candidates, p)
		}
		candidates = append(candidates, "/usr/bin/python3")
	}
	var why []string
	for _, c := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, c, "-c", nvflareProbe, src).CombinedOutput()
		cancel()
		if err == nil {
			return c, ""
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		why = append(why, c+": "+lines[len(lines)-1])
	}
	return "", "no python3 imports NVFlare's launcher interface (" + strings.Join(why, "; ") + ")"
}

// TestPythonNamesMatchGo: the names the module uses are the ones the Go
// side owns (its classes, its argument, the worker marker of the batch
// script).
func TestPythonNamesMatchGo(t *testing.T) {
	src := string(bridge.Source)
	module := strings.TrimSuffix(filepath.Base(bridge.File), ".py")
	client, okClient := strings.CutPrefix(bridge.ClientComponent, module+".")
	server, okServer := strings.CutPrefix(bridge.ServerComponent, module+".")
	if !okClient || !okServer {
		t.Errorf("components %s, %s are not in the module %s that File %s is", bridge.ClientComponent, bridge.ServerComponent, module, bridge.File)
	}
	for _, want := range []string{
		"class " + client + "(",
		"class " + server + "(",
		"*, workspace_path: str, " + bridge.BinaryArg + ": str,",
		`CHILD_PROCESS_ENV = "` + compile.ChildProcessEnv + `"`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("flare_slurm_bridge.py lacks %q", want)
		}
	}
}

// TestCheckBinary: absolute, existing, regular, executable.
func TestCheckBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "flare-slurm")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{exe, ""},
		{"flare-slurm", "is not an absolute path"},
		{filepath.Join(dir, "gone"), "does not exist"},
		{dir, "is not a regular file"},
		{plain, "not executable by uid|has no execute permission"},
	} {
		got := bridge.CheckBinary(c.path)
		if (c.want == "") != (got == "") || (c.want != "" && !regexp.MustCompile(c.want).MatchString(got)) {
			t.Errorf("CheckBinary(%s) = %q, want %q", c.path, got, c.want)
		}
	}
}

// trustCase is one binary on disk that the trust rule accepts or refuses.
type trustCase struct {
	name    string
	setup   func(t *testing.T, dir, exe string)
	trusted bool
	// path, when set, is the path recorded for the binary (made by setup;
	// default exe itself).
	path func(dir, exe string) string
}

// checked is the path the case records for the binary.
func (c trustCase) checked(dir, exe string) string {
	if c.path != nil {
		return c.path(dir, exe)
	}
	return exe
}

// linkIn makes dir/../links (mode perm) holding a symlink "flare-slurm" to
// exe, and returns the symlink's path.
func linkIn(t *testing.T, dir, exe string, perm os.FileMode, owner int) string {
	links := filepath.Join(filepath.Dir(dir), "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(links, "flare-slurm")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if owner >= 0 {
		if err := os.Lchown(link, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(links, perm); err != nil {
		t.Fatal(err)
	}
	return link
}

// setACL gives path a POSIX access ACL (acl(5)) with a named user entry
// uid perm and a mask, owner rwx, group r-x, others r-x.
func setACL(t *testing.T, path string, uid uint32, perm, mask uint16) {
	acl := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 7, 0xffffffff}, {0x02, perm, uid}, {0x04, 5, 0xffffffff}, {0x10, mask, 0xffffffff}, {0x20, 5, 0xffffffff}} {
		acl = binary.LittleEndian.AppendUint16(acl, e.tag)
		acl = binary.LittleEndian.AppendUint16(acl, e.perm)
		acl = binary.LittleEndian.AppendUint32(acl, e.id)
	}
	if err := unix.Setxattr(path, "system.posix_acl_access", acl, 0); err != nil {
		t.Fatalf("setting an ACL on %s: %v", path, err)
	}
}

// trustCases are the binaries issue 25 item 9 is about: one another
// account could replace is refused; the same rule as the Slurm commands.
func trustCases() []trustCase {
	cs := []trustCase{
		{"owned by this account, 0755", func(*testing.T, string, string) {}, true, nil},
		{"writable by every account", func(_ *testing.T, _, exe string) { os.Chmod(exe, 0o757) }, false, nil},
		{"in a directory every account can write", func(_ *testing.T, dir, _ string) { os.Chmod(dir, 0o777) }, false, nil},
		{"in a sticky directory", func(_ *testing.T, dir, _ string) { os.Chmod(dir, 0o777|os.ModeSticky) }, true, nil},
		// A symlink is resolved one link at a time; each link's directory
		// must pass too, or another account could repoint it between the
		// check and the exec (review finding H2).
		{"through a symlink in a trusted directory", func(t *testing.T, dir, exe string) { linkIn(t, dir, exe, 0o755, -1) }, true,
			func(dir, _ string) string { return filepath.Join(filepath.Dir(dir), "links", "flare-slurm") }},
		{"through a symlink in a directory every account can write", func(t *testing.T, dir, exe string) { linkIn(t, dir, exe, 0o777, -1) }, false,
			func(dir, _ string) string { return filepath.Join(filepath.Dir(dir), "links", "flare-slurm") }},
	}
	if os.Geteuid() == 0 {
		cs = append(cs,
			trustCase{"writable by a group other than root's", func(_ *testing.T, _, exe string) { os.Chown(exe, 0, 100); os.Chmod(exe, 0o775) }, false, nil},
			trustCase{"writable by root's group", func(_ *testing.T, _, exe string) { os.Chown(exe, 0, 0); os.Chmod(exe, 0o775) }, true, nil},
			trustCase{"owned by another account", func(_ *testing.T, _, exe string) { os.Chown(exe, 4242, 4242) }, false, nil},
			trustCase{"in a directory of another account", func(_ *testing.T, dir, _ string) { os.Chown(dir, 4242, 0) }, false, nil},
			trustCase{"through another account's symlink in a sticky directory", func(t *testing.T, dir, exe string) { linkIn(t, dir, exe, 0o777|os.ModeSticky, 4242) }, false,
				func(dir, _ string) string { return filepath.Join(filepath.Dir(dir), "links", "flare-slurm") }},
			// A root-owned directory whose ACL lets another account write:
			// its mode shows g+w (the mask) with root's group (review finding H3).
			trustCase{"in a directory whose ACL lets another account write", func(t *testing.T, dir, _ string) { os.Chown(dir, 0, 0); setACL(t, dir, 4242, 7, 7) }, false, nil},
			trustCase{"in a directory whose ACL lets another account read", func(t *testing.T, dir, _ string) { os.Chown(dir, 0, 0); setACL(t, dir, 4242, 5, 7) }, true, nil},
			trustCase{"in a directory whose ACL mask takes the write away", func(t *testing.T, dir, _ string) { os.Chown(dir, 0, 0); setACL(t, dir, 4242, 7, 5) }, true, nil},
			trustCase{"a binary whose ACL lets another account write", func(t *testing.T, _, exe string) { os.Chown(exe, 0, 0); setACL(t, exe, 4242, 7, 7) }, false, nil},
		)
	}
	return cs
}

// TestCheckBinaryTrust (issue 25 item 9): the recorded binary reads every
// job's credentials, so bootstrap-check and validate W refuse one another
// account could replace, as the Slurm commands are refused.
func TestCheckBinaryTrust(t *testing.T) {
	for _, c := range trustCases() {
		dir := filepath.Join(t.TempDir(), "bin")
		os.Mkdir(dir, 0o755)
		exe := filepath.Join(dir, "flare-slurm")
		if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		c.setup(t, dir, exe)
		got := bridge.CheckBinary(c.checked(dir, exe))
		if c.trusted != (got == "") || !c.trusted && !strings.Contains(got, "is not trusted") {
			t.Errorf("%s: CheckBinary = %q, want trusted=%v", c.name, got, c.trusted)
		}
	}
}

// TestPythonTrustRuleIsGos: the bridge checks the binary before every call
// in Python (untrusted()); on every case it agrees with the Go rule. The
// cases are laid out first (each in its own directory) and one Python
// process checks them all, one line each (a start of Python with NVFlare's
// modules costs more than the checks).
func TestPythonTrustRuleIsGos(t *testing.T) {
	t.Parallel() // a Python process of its own
	src := nvflaresrc.Dir()
	py, why := interpreter(t, src)
	if py == "" {
		testenv.Unavailable(t, "the bridge's Python rule cannot be run: %s (set NVFLARE_PYTHON, NVFLARE_SRC)", why)
	}
	cases := trustCases()
	args := []string{"-c", nvflareProbe + "\nimport flare_slurm_bridge as B, json\nfor p in sys.argv[2:]:\n    print(json.dumps(B.untrusted(p) or 'TRUSTED'))", src}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "bin")
		os.Mkdir(dir, 0o755)
		exe := filepath.Join(dir, "flare-slurm")
		if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		c.setup(t, dir, exe)
		args = append(args, c.checked(dir, exe))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s%s", err, out, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("python printed %d lines for %d cases:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		var said string
		if err := json.Unmarshal([]byte(lines[i]), &said); err != nil {
			t.Fatalf("%s: python printed %q: %v", c.name, lines[i], err)
		}
		pyTrusted := said == "TRUSTED"
		goTrusted := bridge.CheckBinary(args[3+i]) == ""
		if pyTrusted != goTrusted || pyTrusted != c.trusted {
			t.Errorf("%s: Python says %q, Go trusted=%v, want trusted=%v", c.name, said, goTrusted, c.trusted)
		}
	}
}
