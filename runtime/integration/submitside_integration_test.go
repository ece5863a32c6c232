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

// TestSbatchRejectionIsNotUnavailable: a job Slurm cannot satisfy (64 CPUs
// on a 4-CPU node) is reported as rejected by Slurm with sbatch's own
// error lines and a hint, not as an unavailable scheduler, and its job dir
// is removed.
func TestSbatchRejectionIsNotUnavailable(t *testing.T) {
	t.Parallel()
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{})
	req, _ := s.job("job-rejected", "exit 0", map[string]any{"resource_spec": map[string]any{"site-1": map[string]any{"num_of_cpus": 64}}})
	out, errs, code := s.run(context.Background(), "launch", "--workspace", s.ws, "--request", req)
	if code != 1 || !strings.Contains(errs, "flare-slurm: error: Slurm rejected job job-rejected: sbatch: error: CPU count per node can not be satisfied; sbatch: error: Batch job submission failed: Requested node configuration is not available") ||
		!strings.Contains(errs, "flare-slurm: hint: check the job's resources and directives") || strings.Contains(errs, "unavailable") {
		t.Fatalf("rejected launch: exit %d\n%s\n%s", code, out, errs)
	}
	if s.exists(s.jobDir("job-rejected")) {
		t.Fatal("the rejected job's dir was left behind")
	}
}
