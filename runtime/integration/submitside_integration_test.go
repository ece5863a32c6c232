package integration

import (
	"os"
	"path"
	"strings"
	"testing"
	"time"

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
