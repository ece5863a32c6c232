package site

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/runtime/manager"
)

// When FLARE_SITE_OPEN_AS_CHILD names a workspace, the test binary only
// opens it and prints the error and its hint (see TestOpenNamesWorkspaceOwner).
func TestMain(m *testing.M) {
	if ws := os.Getenv("FLARE_SITE_OPEN_AS_CHILD"); ws != "" {
		_, err := Open(context.Background(), ws, Options{Runner: &recorder{}})
		fmt.Printf("err=%v\nhint=%s\n", err, manager.Hint(err))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A workspace prepared by root (root-owned, 0700) opened by the runtime
// account is reported by its owner, not as an unreadable settings file.
// The test re-runs its own binary as uid 65534, so it needs root.
func TestOpenNamesWorkspaceOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another uid")
	}
	ws := clientWorkspace(t)
	// Let the other account reach the workspace (not read it) and run the
	// test binary.
	for d := filepath.Dir(ws); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o011 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := filepath.Join(filepath.Dir(ws), "site.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"FLARE_SITE_OPEN_AS_CHILD=" + ws}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := fmt.Sprintf("err=workspace %s is owned by uid 0 (root), not by the runtime account uid 65534", ws)
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "permission denied") {
		t.Fatalf("child output:\n%s\nwant %q", out, want)
	}
	if !strings.Contains(string(out), "hint=run the runtime as the workspace's owner, give it to the runtime account (chown -R 65534 "+ws) {
		t.Fatalf("child hint:\n%s", out)
	}
}

func TestCheckWorkspaceAccess(t *testing.T) {
	ws := clientWorkspace(t)
	if err := manager.CheckWorkspaceAccess(ws, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	err := manager.CheckWorkspaceAccess(ws, os.Getuid()+1)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("is owned by uid %d", os.Getuid())) ||
		!strings.Contains(err.Error(), fmt.Sprintf("not by the runtime account uid %d", os.Getuid()+1)) ||
		!strings.Contains(manager.Hint(err), "chown -R") {
		t.Fatalf("foreign owner: %v (hint %q)", err, manager.Hint(err))
	}
	os.Chmod(ws, 0o750)
	if err := manager.CheckWorkspaceAccess(ws, os.Getuid()); err == nil || manager.Hint(err) != "chmod 700 "+ws+" (as its owner)" {
		t.Fatalf("group bits: %v (hint %q)", err, manager.Hint(err))
	}
	// A missing workspace is left to the loader.
	if err := manager.CheckWorkspaceAccess(filepath.Join(ws, "nope"), os.Getuid()); err != nil {
		t.Fatal(err)
	}
}
