package fedbench

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Dist
	}{
		{nil, Dist{}},
		{[]float64{3}, Dist{1, 3, 3, 3}},
		{[]float64{4, 1, 3, 2}, Dist{4, 2.5, 4, 4}},
		// 20 values: the 95th percentile is the 19th.
		{[]float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, Dist{20, 10.5, 19, 20}},
	} {
		if got := summarise(c.in); got != c.want {
			t.Errorf("Summarise(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// synthetic builds a run of n jobs, each submitted at t0+i s, running from
// t0+i+2 s, its workers exiting at t0+i+30 s, the client's end logged seen
// after seen, and FINISHED 2 s after that.
func synthetic(n int, seen time.Duration) Input {
	t0 := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	in := Input{Launcher: FlareSlurm, PollInterval: 10, Start: t0, End: t0.Add(time.Hour),
		ClientSeen: map[string]ClientSeen{}, WorkerExit: map[string]map[string]time.Time{}, SlurmEnd: map[string]time.Time{}, ParentUser: "flaretest",
		Ctld:     RPCStats{ByType: map[string]int64{"REQUEST_SUBMIT_BATCH_JOB": int64(2 * n), "REQUEST_JOB_USER_INFO": 10}, ByUser: map[string]int64{"flaretest": int64(2*n) + 10, "root": 99}},
		Dbd:      RPCStats{ByType: map[string]int64{"DBD_GET_JOBS_COND": 4}, ByUser: map[string]int64{"flaretest": 12}},
		Baseline: Sample{Processes: 4, PrivateKiB: 100 << 10, parents: 2, ParentsKiB: 90 << 10}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("job-%d", i)
		sub := t0.Add(time.Duration(i) * time.Second)
		start := sub.Add(2 * time.Second)
		exit := sub.Add(30 * time.Second)
		seenAt := exit.Add(seen)
		fin := seenAt.Add(2 * time.Second)
		in.Jobs = append(in.Jobs, JobMeta{JobID: id, Status: "FINISHED:COMPLETED",
			SubmitTime: float64(sub.UnixNano()) / 1e9, StartTime: start.Format(time.RFC3339Nano),
			Duration: fmt.Sprintf("0:00:%09.6f", fin.Sub(start).Seconds())})
		in.ClientSeen[id] = ClientSeen{At: seenAt, RC: 0}
		in.WorkerExit[id] = map[string]time.Time{ServerSite: exit.Add(-time.Second), ClientSite: exit}
		for k, site := range []string{ServerSite, ClientSite} {
			sid := fmt.Sprint(100 + 2*i + k)
			in.Slurm = append(in.Slurm, SlurmJob{ID: sid, Name: SlurmJobName(site, id), State: "COMPLETED",
				Submit: sub.Add(time.Second), Start: sub.Add(time.Second), End: exit.Add(time.Second)})
			// slurmctld records the end half a second after the worker's exit.
			in.SlurmEnd[sid] = exit.Add(500 * time.Millisecond)
		}
	}
	// One sample while every job runs, one after.
	last := t0.Add(time.Duration(n-1) * time.Second)
	// The parents grow by 1 MiB a job, what they started by 1 MiB and one
	// process a job.
	peak := Sample{Processes: 4 + n, PrivateKiB: (100 << 10) + int64(n)*(2<<10), parents: 2, ParentsKiB: (90 << 10) + int64(n)*(1<<10)}
	in.Samples = []Sample{peak, peak, {At: last.Add(time.Minute), Processes: 4, PrivateKiB: 101 << 10, parents: 2, ParentsKiB: 91 << 10}}
	in.Samples[0].At = last.Add(10 * time.Second)
	in.Samples[1].At = last.Add(10*time.Second + 500*time.Millisecond)
	return in
}

func TestAnalyze(t *testing.T) {
	in := synthetic(10, 3*time.Second)
	r, err := Analyze(in)
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if r.Jobs != 10 || r.SlurmJobs != 20 {
		t.Errorf("jobs %d, Slurm jobs %d", r.Jobs, r.SlurmJobs)
	}
	// submit → FINISHED: 30 + 3 + 2 s for every job.
	near("wall median", r.WallTime.Median, 35)
	near("client seen max, from the Slurm end", r.ClientSeen.Max, 2.5)
	near("client seen max, from the worker's exit", r.ClientExitSeen.Max, 3)
	near("end → FINISHED", r.Finished.Median, 5)
	// Watched: the client from its submission (sub+1) to seen (sub+33), the
	// server to FINISHED (sub+35): 32 + 34 s per job.
	near("watched job-minutes", r.RPC.WatchedJobMinutes, 10*66.0/60)
	near("RPCs per job-minute", r.RPC.PerJobMinute, 30/(10*66.0/60))
	near("without submissions", r.RPC.PollPerJobMinute, 10/(10*66.0/60))
	near("slurmdbd per job-minute", r.RPC.DbdPerJobMinute, 12/(10*66.0/60))
	if r.RPC.ParentCtld != 30 || r.RPC.Submits != 20 {
		t.Errorf("parent RPCs %+v", r.RPC)
	}
	// 20 running at the first two samples: 10 processes and 20 MiB more.
	if r.Memory.PeakRunning != 20 {
		t.Errorf("peak running %d, want 20", r.Memory.PeakRunning)
	}
	near("processes per running job", r.Memory.ProcessesPerJob, 0.5)
	near("MiB per running job", r.Memory.PrivateMiBPerJob, 1)
	near("parents at the peak", r.Memory.PeakParentsMiB, 100)
	near("the rest's processes per running job", r.Memory.OthersProcessesPerJob, 0.5)
	near("the rest's MiB per running job", r.Memory.OthersMiBPerJob, 0.5)
	if r.States.Lost != 0 || r.States.Misread != 0 || r.States.NVFlare["FINISHED:COMPLETED"] != 10 || r.States.Slurm["COMPLETED"] != 20 {
		t.Errorf("states %+v", r.States)
	}
}

// Without job ends in slurmctld's log (Slurm 24.11 logs to stderr without
// times) the latency is measured from accounting's End (whole seconds), and
// counted: never a zero for no measurement.
func TestAnalyzeFallsBackToAccountingEnd(t *testing.T) {
	in := synthetic(4, 3*time.Second)
	in.SlurmEnd = map[string]time.Time{}
	r, err := Analyze(in)
	if err != nil {
		t.Fatal(err)
	}
	// accounting's End is a second after the exit: seen 2 s after it.
	if r.ClientSeen.N != 4 || math.Abs(r.ClientSeen.Max-2) > 1e-6 || r.ClientEndsFromAccounting != 4 {
		t.Errorf("client seen %+v, from accounting %d; want 4 jobs, max 2 s, 4 from accounting", r.ClientSeen, r.ClientEndsFromAccounting)
	}
	res := Result{PollInterval: 10, Runs: []Run{r, func() Run { nv := r; nv.Launcher = NVFlare; return nv }()}}
	for _, tg := range Targets(res) {
		if strings.HasPrefix(tg.Name, "client's Slurm job end") &&
			(!tg.Met || !strings.Contains(tg.FlareSlurm, "4 of them from accounting's End")) {
			t.Errorf("latency target %+v", tg)
		}
	}
}

// A job NVFlare never finished, a worker missing from accounting, a client
// whose end the parent never logged and one whose code it misread are each
// counted, and said.
func TestAnalyzeCountsLostAndMisread(t *testing.T) {
	in := synthetic(4, time.Second)
	in.Jobs[0].Status = "RUNNING"
	in.Slurm = in.Slurm[:len(in.Slurm)-1] // job-3's client worker
	delete(in.ClientSeen, "job-1")
	in.ClientSeen["job-2"] = ClientSeen{At: in.ClientSeen["job-2"].At, RC: 1}
	r, err := Analyze(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.States.Lost != 2 || r.States.Misread != 2 || len(r.States.Notes) != 4 {
		t.Errorf("states %+v", r.States)
	}
}
