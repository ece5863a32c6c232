package integration

import (
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"context"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// TestPercentPathAndSubmitSideEnv runs a job compiled by the compiler in a
// workspace whose path holds Slurm filename patterns (%u, %j, %x) and
// from a parent whose environment holds a variable of its own:
//
//   - the job's output lands in the literal run dir: sbatch got the '%'
//     doubled in --output (issue 9 item 8);
//   - the worker does not see the parent's variable: --export=NIL holds
//     for a job the compiler made, not only for a hand-written argv (item
//     16).
func TestPercentPathAndSubmitSideEnv(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{wsName: "ws%u%j%x"})
	const marker = "FLARE_SLURM_SUBMIT_SIDE_ONLY"
	s.env = append(s.env, marker+"=parent-only-7c1e")
	req, _ := s.job("job-pct", "exit 0", nil)
	l := s.launch(req)
	st := s.wait("job-pct", 2*time.Minute)
	if st.ReturnCode != 0 || st.State != "COMPLETED" {
		t.Fatalf("result %+v", st)
	}
	out := path.Join(s.ws, "job-pct", "slurm-"+l.SlurmJobID+".out")
	if _, err := os.Stat(s.c.HostPath(out)); err != nil {
		ents, _ := os.ReadDir(s.c.HostPath(s.base))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("the job's output is not at the literal path %s (%v); %s holds %v", out, err, s.base, names)
	}
	seen := s.read(path.Join(s.ws, "job-pct", "worker-seen.txt"))
	if !strings.Contains(seen, "SLURM_JOB_ID="+l.SlurmJobID+"\n") {
		t.Fatalf("worker-seen.txt is not the worker's environment:\n%s", seen)
	}
	if strings.Contains(seen, marker) {
		t.Fatalf("a variable set only on the submit side reached the worker:\n%s", seen)
	}
}

// TestSbatchRejectionIsNotUnavailable: a job no node can satisfy (64 CPUs
// on 4-CPU nodes). Slurm 24.11 refuses it at submission: it is reported as
// rejected by Slurm with sbatch's own error lines and a hint, not as an
// unavailable scheduler, and its job dir is removed. Slurm 26.05 accepts
// it and keeps it pending (reason PartitionConfig: EnforcePartLimits=NO,
// the default, now covers a request beyond every node), so the runtime
// reports PENDING, never a guessed end, until pending_timeout or a cancel
// ends it (here a cancel: 9).
func TestSbatchRejectionIsNotUnavailable(t *testing.T) {
	t.Parallel()
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{})
	req, _ := s.job("job-rejected", "exit 0", map[string]any{"resource_spec": map[string]any{"site-1": map[string]any{"num_of_cpus": 64}}})
	if c.SlurmAtLeast("26.05") {
		l := s.launch(req)
		for i := 0; i < 4; i++ {
			if st := s.status("job-rejected"); st.State != "PENDING" || st.Terminal {
				t.Fatalf("an unsatisfiable job on Slurm %s: status %+v, want PENDING", c.SlurmVersion, st)
			}
			time.Sleep(time.Second)
		}
		reason := strings.TrimSpace(c.Run(t, "squeue", "-h", "-j", l.SlurmJobID, "-o", "%r"))
		if reason != "PartitionConfig" {
			t.Errorf("squeue reason %q, want PartitionConfig", reason)
		}
		if _, errs, code := s.run(context.Background(), "cancel", "--workspace", s.ws, "--job-id", "job-rejected"); code != 0 {
			t.Fatalf("cancel: exit %d %s", code, errs)
		}
		if st := s.wait("job-rejected", 2*time.Minute); st.ReturnCode != 9 || st.State != "CANCELLED" {
			t.Fatalf("after the cancel: %+v", st)
		}
		return
	}
	out, errs, code := s.run(context.Background(), "launch", "--workspace", s.ws, "--request", req)
	if code != 1 || !strings.Contains(errs, "flare-slurm: error: Slurm rejected job job-rejected: sbatch: error: CPU count per node can not be satisfied; sbatch: error: Batch job submission failed: Requested node configuration is not available") ||
		!strings.Contains(errs, "flare-slurm: hint: check the job's resources and directives") || strings.Contains(errs, "unavailable") {
		t.Fatalf("rejected launch: exit %d\n%s\n%s", code, out, errs)
	}
	if s.exists(s.jobDir("job-rejected")) {
		t.Fatal("the rejected job's dir was left behind")
	}
}
