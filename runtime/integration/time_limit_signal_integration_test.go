package integration

import (
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// TestTimeLimitSignalOnCluster: with time_limit_signal {USR1, 60} and a
// three-minute time limit, the worker receives SIGUSR1 about 60 s before
// Slurm would end the job (issue 28 item 11), saves its state and exits
// 0: the job completes instead of timing out. Slurm checks time limits
// periodically and may send the signal up to 60 s earlier than asked
// (sbatch(1)), so the signal must come after 55 s and no later than 125 s
// after the worker started (the time limit less 60 s, plus 5 s).
func TestTimeLimitSignalOnCluster(t *testing.T) {
	t.Parallel() // before Require: a paused test must not hold the cluster
	c := slurmtest.Require(t)
	s := newSite(t, c, siteOpts{launcherArgs: map[string]any{"time_limit_signal": map[string]any{"signal": "USR1", "seconds_before": 60}}})
	// The worker (the batch shell, by exec) traps USR1: it records when the
	// signal came, "saves its state" and exits 0; without it the job runs
	// into its limit.
	behaviour := `start=$(date +%s)
trap 'echo $(( $(date +%s) - start )) > got-usr1; echo saved > state; exit 0' USR1
for i in $(seq 1 500); do sleep 0.5; done
exit 7`
	meta := map[string]any{"launcher_spec": map[string]any{"site-1": map[string]any{"slurm": map[string]any{"time": "3"}}}}
	req, _ := s.job("job-warned", behaviour, meta)
	l := s.launch(req)
	argv := s.read(path.Join(s.tools, "sbatch-argv."+strings.TrimSpace(firstSbatchPID(t, s))))
	if !strings.Contains(argv, "--signal=B:USR1@60\n") {
		t.Errorf("sbatch argv lacks --signal=B:USR1@60:\n%s", argv)
	}
	st := s.wait("job-warned", 5*time.Minute)
	if st.ReturnCode != 0 || st.State != "COMPLETED" {
		t.Fatalf("result %+v: the worker did not save its state before the limit\njob output:\n%s", st, s.slurmOut("job-warned", l.SlurmJobID))
	}
	got, err := strconv.Atoi(strings.TrimSpace(s.read(path.Join(s.ws, "job-warned", "got-usr1"))))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGUSR1 came %d s after the worker started (limit 180 s, asked 60 s before it)", got)
	if got < 55 || got > 125 {
		t.Errorf("SIGUSR1 came %d s after the worker started, want between 55 and 125 s (180 s limit less 60 s, Slurm may be up to 60 s early)", got)
	}
}

// firstSbatchPID is the suffix of the argv file the recording sbatch wrote.
func firstSbatchPID(t *testing.T, s *site) string {
	t.Helper()
	out := s.c.Run(t, "bash", "-c", "cd "+s.tools+" && ls sbatch-argv.* | head -1")
	_, pid, _ := strings.Cut(strings.TrimSpace(out), "sbatch-argv.")
	return pid
}
