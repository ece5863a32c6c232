package integration

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// TestForeignOwnedWorkspace: a workspace prepared by root (root-owned,
// 0700) used by the runtime account is reported by its owner.
func TestForeignOwnedWorkspace(t *testing.T) {
	t.Parallel()
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{})
	host := c.HostPath(s.ws)
	st, err := os.Stat(host)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(host, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chown(host, int(statUID(st)), int(statGID(st))) })
	for _, args := range [][]string{
		{"bootstrap-check", "--workspace", s.ws},
		{"status", "--workspace", s.ws, "--job-id", "job-x"},
		{"gc", "--workspace", s.ws},
	} {
		out, errs, code := s.run(context.Background(), args...)
		if code != 1 || !strings.Contains(errs, "flare-slurm: error: workspace "+s.ws+" is owned by uid 0 (root), not by the runtime account uid ") ||
			!strings.Contains(errs, "flare-slurm: hint: run the runtime as the workspace's owner") || strings.Contains(errs, "permission denied") {
			t.Fatalf("%s: exit %d\n%s\n%s", args[0], code, out, errs)
		}
	}
}

func statUID(st os.FileInfo) uint32 { return st.Sys().(*syscall.Stat_t).Uid }

func statGID(st os.FileInfo) uint32 { return st.Sys().(*syscall.Stat_t).Gid }
