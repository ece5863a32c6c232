package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// TestGCHandlelessDirOfHiddenPartitionJob: a launch that crashed before
// writing handle.json left its dir while its job runs in a partition
// configured Hidden=YES. Plain `squeue --user` does not list such jobs,
// so gc must ask with --all; it keeps the dir while the job is in the
// queue and removes it once the job ended.
func TestGCHandlelessDirOfHiddenPartitionJob(t *testing.T) {
	t.Parallel()
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{})
	part := fmt.Sprintf("flarehidden%d", os.Getpid())
	c.RunRoot(t, "scontrol", "create", "PartitionName="+part, "Nodes=ALL", "Hidden=YES", "State=UP")
	t.Cleanup(func() { c.RootCommand(context.Background(), "scontrol", "delete", "PartitionName="+part).Run() })
	id := strings.TrimSpace(c.Run(t, "sbatch", "--parsable", "--partition="+part, "--output=/dev/null", "--chdir="+s.base,
		"--job-name=nvfl-site-1-hidden", "--comment=nvfl:job-hidden", "--wrap=sleep 300"))
	t.Cleanup(func() { c.Command(context.Background(), "scancel", id).Run() })
	dir := s.jobDir("job-hidden")
	c.Mkdir(t, dir, 0o700)
	old := time.Now().Add(-time.Hour) // not a launch in progress
	if err := os.Chtimes(c.HostPath(dir), old, old); err != nil {
		t.Fatal(err)
	}
	out, errs, code := s.run(context.Background(), "gc", "--workspace", s.ws, "--yes", "--json")
	if code != 0 || !strings.Contains(out, `"verdict": "live"`) || !s.exists(dir) {
		t.Fatalf("gc removed the dir of a job queued in a hidden partition: exit %d\n%s\n%s", code, out, errs)
	}
	c.Run(t, "scancel", id)
	deadline := time.Now().Add(time.Minute)
	for strings.Contains("\n"+c.Run(t, "squeue", "-h", "--all", "--user=flaretest", "--format=%i")+"\n", "\n"+id+"\n") {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled job stayed in the queue")
		}
		time.Sleep(300 * time.Millisecond)
	}
	out, errs, code = s.run(context.Background(), "gc", "--workspace", s.ws, "--yes", "--json")
	if code != 0 || !strings.Contains(out, `"removed": true`) || s.exists(dir) {
		t.Fatalf("gc after the job ended: exit %d\n%s\n%s", code, out, errs)
	}
}
