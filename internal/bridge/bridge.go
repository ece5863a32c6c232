// Package bridge is the NVFlare side of the flare-slurm runtime: a small
// Python launcher component (flare_slurm_bridge.py, embedded here) that
// prepare --launcher flare-slurm writes into the workspace's local/custom/
// and names in local/resources.json.default in place of NVFlare's Slurm
// launcher. The component claims the site's jobs and calls this binary
// (launch, status, wait, cancel with --json) for every decision.
//
// This package owns the names both sides use: the module and its classes,
// the component argument that records the binary, the file's place in the
// workspace, and the check that the recorded binary can be run.
package bridge

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/trust"
)

// Source is the Python module prepare writes to File.
//
//go:embed flare_slurm_bridge.py
var Source []byte

const (
	// module is the Python module name of the bridge.
	module = "flare_slurm_bridge"
	// File is where prepare writes it, relative to the workspace: the
	// directory the parent adds to its import path (NVFlare's site custom dir).
	File = "local/custom/" + module + ".py"
	// ClientComponent and ServerComponent are the component paths of
	// local/resources.json.default.
	ClientComponent = module + ".ClientFlareSlurmJobLauncher"
	ServerComponent = module + ".ServerFlareSlurmJobLauncher"
	// BinaryArg is the component argument holding the absolute path of
	// the flare-slurm binary that prepared the workspace, the one the
	// bridge calls.
	BinaryArg = "flare_slurm"
)

// Launchers a workspace can name (prepare --launcher).
const (
	// LauncherNVFlare is NVFlare's own Slurm launcher: the workspace is
	// byte-equal to 'nvflare deploy prepare'.
	LauncherNVFlare = "nvflare"
	// LauncherFlareSlurm is the bridge: the parent hands its jobs to flare-slurm.
	LauncherFlareSlurm = "flare-slurm"
)

// Launchers are the values of prepare --launcher, the default first.
var Launchers = []string{LauncherNVFlare, LauncherFlareSlurm}

// Component is the component path of the bridge for role ("client" or "server").
func Component(role string) string {
	if role == "server" {
		return ServerComponent
	}
	return ClientComponent
}

// RoleOf is the role of a bridge component path, "" when path is not one.
func RoleOf(path string) string {
	switch path {
	case ClientComponent:
		return "client"
	case ServerComponent:
		return "server"
	}
	return ""
}

// Executable returns the path prepare records when no --binary is given:
// the path this binary was run as (os.Args[0], looked up in PATH when it
// has no slash), made absolute but with its symlinks kept, so that a
// workspace prepared through a stable symlink (/usr/local/bin/flare-slurm,
// .../flare-slurm/current/bin/flare-slurm) keeps naming it after an upgrade
// retargets the link. When that path is not this binary (a changed
// argv[0]), it is the running binary's resolved path.
func Executable() (string, error) { return executable(os.Args[0]) }

// executable is Executable for a process run as argv0.
func executable(argv0 string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the path of this flare-slurm binary: %w", err)
	}
	// argv0 as a shell found it, made absolute and cleaned.
	p := argv0
	if !strings.Contains(p, "/") {
		if p, err = exec.LookPath(p); err != nil {
			p = ""
		}
	}
	if abs, err := filepath.Abs(p); p != "" && err == nil && sameFile(abs, self) {
		return abs, nil
	}
	real, err := filepath.EvalSymlinks(self)
	if err != nil {
		return "", fmt.Errorf("cannot resolve the path of this flare-slurm binary %s: %w", self, err)
	}
	return filepath.Abs(real)
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// CheckBinary says what is wrong with the recorded binary path for the
// account running this process ("" when nothing): it must be absolute and
// name a regular file this account may execute.
func CheckBinary(path string) string {
	if !filepath.IsAbs(path) {
		return fmt.Sprintf("%q is not an absolute path", path)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("the flare-slurm binary %s does not exist", path)
	case err != nil:
		return fmt.Sprintf("the flare-slurm binary %s cannot be inspected: %v", path, fsx.Pathless(err))
	case !st.Mode().IsRegular():
		return fmt.Sprintf("the flare-slurm binary %s is not a regular file", path)
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return fmt.Sprintf("the flare-slurm binary %s is not executable by uid %d: %v", path, os.Getuid(), err)
	}
	// access(2) grants root X_OK when any execute bit is set; none set
	// means nobody can run it.
	if st.Mode().Perm()&0o111 == 0 {
		return fmt.Sprintf("the flare-slurm binary %s has no execute permission (mode %04o)", path, st.Mode().Perm())
	}
	// The binary reads every job's credentials on its standard input:
	// the trust rule of the Slurm commands applies (the bridge applies
	// the same rule before every call).
	if _, err := trust.Resolve(path, os.Geteuid()); err != nil {
		return fmt.Sprintf("the flare-slurm binary is not trusted: %v", err)
	}
	return ""
}

// BinaryHint is what to do about a binary CheckBinary refused.
const BinaryHint = "install flare-slurm at that path, owned by root or the runtime account and writable by no other account (nor any directory above it), or prepare the workspace again with --launcher flare-slurm using the binary the parent's account should run"
