// The fedbench_*_test.go files are the measuring side of `make
// bench-federation` (TestFederationBenchmark, federation_bench_test.go): the
// same NVFlare federation and jobs run with NVFlare's Slurm launcher and with
// the flare-slurm runtime, and these files read what the scheduler, the
// parents and NVFlare report, compute the figures and write them into
// docs/performance.md. They hold no cluster code, so their parsing and
// arithmetic are unit tested here without the Slurm cluster (their tests
// call no slurmtest.Require).

package integration

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Launchers, as the report names them.
const (
	NVFlare    = "nvflare"     // NVFlare's SlurmJobLauncher (prepare's default)
	FlareSlurm = "flare-slurm" // prepare --launcher flare-slurm
)

// Sites of the benchmark's federation: the server parent launches under
// NVFlare's identity "server", the one client is site-1.
const (
	ServerSite = "server"
	ClientSite = "site-1"
)

// Input is everything measured in one run (one launcher, one number of
// concurrent NVFlare jobs), as Analyze needs it.
type Input struct {
	Launcher     string
	PollInterval float64 // seconds, both launchers
	Start, End   time.Time
	LoadStart    string // /proc/loadavg's first three fields
	LoadEnd      string
	Jobs         []JobMeta             // the admin script's report, one per submitted job
	ClientSeen   map[string]ClientSeen // from the client parent's log
	// WorkerExit is when each worker's Python process exited (the
	// benchmark's python_path wrapper records it): job id → site → time.
	WorkerExit map[string]map[string]time.Time
	// SlurmEnd is when slurmctld recorded each Slurm job's end (its log),
	// by Slurm job id; empty when the log could not be read or has no
	// times (accounting's End is used then).
	SlurmEnd   map[string]time.Time
	Slurm      []SlurmJob // the run's jobs' accounting records
	Ctld, Dbd  RPCStats   // sdiag and sacctmgr show stats, reset at Start, read at End
	ParentUser string     // the parents' account
	Baseline   Sample     // the parents idle, just before the first submission
	Samples    []Sample   // the parent host every second of the run
}

// Run is one run's figures.
type Run struct {
	Launcher  string  `json:"launcher"`
	Jobs      int     `json:"jobs"`       // NVFlare jobs submitted at once
	SlurmJobs int     `json:"slurm_jobs"` // worker jobs found in accounting
	Seconds   float64 `json:"seconds"`    // first submission to the last FINISHED
	LoadStart string  `json:"load_start"`
	LoadEnd   string  `json:"load_end"`

	// WallTime: each NVFlare job's submit to its FINISHED status.
	WallTime Dist `json:"wall_time_s"`
	// ClientSeen: a client worker's Slurm job's end (slurmctld's log) to
	// its parent logging the return code (the launcher's wait and poll, end
	// to end); ClientExitSeen the same from the worker's Python exit, which
	// comes first (the batch script and slurmstepd end after it).
	ClientSeen     Dist `json:"client_end_to_seen_s"`
	ClientExitSeen Dist `json:"client_exit_to_seen_s"`
	// ClientEndsFromAccounting is how many of ClientSeen's jobs have no end
	// in slurmctld's log (Slurm 24.11 logs to stderr without times) and
	// were measured from accounting's End instead: whole seconds, cut
	// down, so the latency comes out up to a second too long, never short.
	ClientEndsFromAccounting int `json:"client_ends_from_accounting,omitempty"`
	// Finished: the later of a job's two worker exits to NVFlare's
	// FINISHED status (the launchers, then NVFlare's own job completion).
	Finished Dist `json:"end_to_finished_s"`

	RPC    RPCFigures   `json:"rpc"`
	Memory MemFigures   `json:"parent_host"`
	States StateFigures `json:"states"`
	// Samples are the parent host every second, and PerJob each job's
	// times (the JSON file only).
	Samples []Sample   `json:"samples,omitempty"`
	PerJob  []JobTimes `json:"per_job,omitempty"`
}

// JobTimes are one NVFlare job's times, in seconds after its submission
// (zero: not known): its workers' Slurm submission, start and end
// (accounting, whole seconds), their Python's exit, the client parent
// logging the client's end, and the FINISHED status.
type JobTimes struct {
	JobID        string  `json:"job_id"`
	ServerSubmit float64 `json:"server_submit"`
	ServerStart  float64 `json:"server_start"`
	ServerEnd    float64 `json:"server_end"`
	ServerExit   float64 `json:"server_exit"`
	ClientSubmit float64 `json:"client_submit"`
	ClientStart  float64 `json:"client_start"`
	ClientEnd    float64 `json:"client_end"`
	ClientDone   float64 `json:"client_done"` // slurmctld's log
	ClientExit   float64 `json:"client_exit"`
	ClientSeen   float64 `json:"client_seen"`
	Finished     float64 `json:"finished"`
}

// RPCFigures are the scheduler RPCs of the run.
type RPCFigures struct {
	// Ctld and Dbd are every RPC slurmctld and slurmdbd counted (all users:
	// the daemons' own messages about the jobs too).
	Ctld RPCStats `json:"slurmctld"`
	Dbd  RPCStats `json:"slurmdbd"`
	// ParentCtld and ParentDbd are the parents' account's RPCs: everything
	// the launchers asked (the benchmark's own queries run as root).
	ParentCtld int64 `json:"parent_slurmctld"`
	ParentDbd  int64 `json:"parent_slurmdbd"`
	Submits    int64 `json:"submits"` // REQUEST_SUBMIT_BATCH_JOB
	// WatchedJobMinutes sums, over the run's Slurm jobs, the time from
	// submission to its parent seeing the end (a client job: the log line;
	// a server job: the job's FINISHED).
	WatchedJobMinutes float64 `json:"watched_job_minutes"`
	// PerJobMinute is ParentCtld / WatchedJobMinutes; PollPerJobMinute
	// leaves the submissions out (the same number for both launchers).
	PerJobMinute     float64 `json:"parent_slurmctld_per_job_minute"`
	PollPerJobMinute float64 `json:"parent_slurmctld_per_job_minute_without_submits"`
	DbdPerJobMinute  float64 `json:"parent_slurmdbd_per_job_minute"`
}

// MemFigures are the parent host's processes and memory: at the samples
// with the most Slurm jobs running, against the idle parents (started for
// the run) just before it.
type MemFigures struct {
	BaselineProcesses  int     `json:"baseline_processes"`
	BaselinePrivateMiB float64 `json:"baseline_private_mib"`
	PeakRunning        int     `json:"peak_running_jobs"`
	PeakProcesses      float64 `json:"peak_processes"`
	PeakPrivateMiB     float64 `json:"peak_private_mib"`
	// Per running job: (peak − baseline) / PeakRunning.
	ProcessesPerJob  float64 `json:"processes_per_running_job"`
	PrivateMiBPerJob float64 `json:"private_mib_per_running_job"`
	MaxProcesses     int     `json:"max_processes"`
	// The same, split: the NVFlare parents themselves (python3; the same
	// code for both launchers, but for the launcher it runs), and
	// everything they started (the launcher's own processes).
	BaselineParentsMiB    float64 `json:"baseline_parents_private_mib"`
	PeakParentsMiB        float64 `json:"peak_parents_private_mib"`
	OthersProcessesPerJob float64 `json:"others_processes_per_running_job"`
	OthersMiBPerJob       float64 `json:"others_private_mib_per_running_job"`
	// Where the parents' memory is, idle and at the peak (each field the
	// median of the peak's samples), and their threads.
	BaselineParents ParentMemory `json:"baseline_parents"`
	PeakParents     ParentMemory `json:"peak_parents"`
}

// StateFigures are the final states, and what did not add up.
type StateFigures struct {
	NVFlare map[string]int `json:"nvflare"` // NVFlare job status → jobs
	Slurm   map[string]int `json:"slurm"`   // sacct state → worker jobs
	// Lost: an NVFlare job not FINISHED, or a worker job missing from
	// accounting or not terminal. Misread: a client job whose return code
	// the parent logged differs from its Slurm exit code, or whose end the
	// parent never logged.
	Lost    int      `json:"lost"`
	Misread int      `json:"misread"`
	Notes   []string `json:"notes,omitempty"`
}

// Analyze computes a run's figures.
func Analyze(in Input) (Run, error) {
	r := Run{Launcher: in.Launcher, Jobs: len(in.Jobs), LoadStart: in.LoadStart, LoadEnd: in.LoadEnd}
	bySlurmName := map[string]SlurmJob{}
	for _, j := range in.Slurm {
		bySlurmName[j.Name] = j
	}
	var wall, seen, exitSeen, finished []float64
	var watched time.Duration
	st := StateFigures{NVFlare: map[string]int{}, Slurm: map[string]int{}}
	first, last := time.Time{}, time.Time{}
	note := func(format string, a ...any) {
		if len(st.Notes) < 20 {
			st.Notes = append(st.Notes, fmt.Sprintf(format, a...))
		}
	}
	for _, m := range in.Jobs {
		st.NVFlare[m.Status]++
		sub := m.submitted()
		if first.IsZero() || sub.Before(first) {
			first = sub
		}
		fin, err := m.finished()
		if m.Status == "" || len(m.Status) < 9 || m.Status[:9] != "FINISHED:" || err != nil {
			st.Lost++
			note("job %s: NVFlare status %q", m.JobID, m.Status)
			continue
		}
		if fin.After(last) {
			last = fin
		}
		wall = append(wall, fin.Sub(sub).Seconds())
		exits := in.WorkerExit[m.JobID]
		rel := func(at time.Time) float64 {
			if at.IsZero() {
				return 0
			}
			return at.Sub(sub).Seconds()
		}
		srv, cli := bySlurmName[SlurmJobName(ServerSite, m.JobID)], bySlurmName[SlurmJobName(ClientSite, m.JobID)]
		r.PerJob = append(r.PerJob, JobTimes{JobID: m.JobID,
			ServerSubmit: rel(srv.Submit), ServerStart: rel(srv.Start), ServerEnd: rel(srv.End), ServerExit: rel(exits[ServerSite]),
			ClientSubmit: rel(cli.Submit), ClientStart: rel(cli.Start), ClientEnd: rel(cli.End), ClientDone: rel(in.SlurmEnd[cli.ID]), ClientExit: rel(exits[ClientSite]),
			ClientSeen: rel(in.ClientSeen[m.JobID].At), Finished: rel(fin)})
		var lastExit time.Time
		for _, site := range []string{ServerSite, ClientSite} {
			name := SlurmJobName(site, m.JobID)
			sj, ok := bySlurmName[name]
			if !ok || !sj.Terminal() {
				st.Lost++
				note("job %s: Slurm job %s %s", m.JobID, name, map[bool]string{true: "not terminal: " + sj.State, false: "not in accounting"}[ok])
				continue
			}
			r.SlurmJobs++
			st.Slurm[sj.State]++
			exit, ok := exits[site]
			if ok && exit.After(lastExit) {
				lastExit = exit
			}
			end := fin // when the parent had seen it at the latest
			if site == ClientSite {
				cs, ok := in.ClientSeen[m.JobID]
				switch {
				case !ok:
					st.Misread++
					note("job %s: the client parent never logged its worker's end", m.JobID)
				case cs.RC != sj.ExitCode:
					st.Misread++
					note("job %s: client parent logged RC %d, Slurm exit code %d (%s)", m.JobID, cs.RC, sj.ExitCode, sj.State)
				}
				if ok {
					end = cs.At
					if exit, found := exits[ClientSite]; found {
						exitSeen = append(exitSeen, cs.At.Sub(exit).Seconds())
					}
					if e, found := in.SlurmEnd[sj.ID]; found {
						seen = append(seen, cs.At.Sub(e).Seconds())
					} else if !sj.End.IsZero() {
						// Accounting's End is whole seconds, up to 1 s before
						// the end; the worker's exit is before the end too:
						// the later of the two is the nearer.
						e := sj.End
						if exit, found := exits[ClientSite]; found && exit.After(e) {
							e = exit
						}
						seen = append(seen, cs.At.Sub(e).Seconds())
						r.ClientEndsFromAccounting++
					}
				}
			}
			if !sj.Submit.IsZero() && end.After(sj.Submit) {
				watched += end.Sub(sj.Submit)
			}
		}
		if !lastExit.IsZero() {
			finished = append(finished, fin.Sub(lastExit).Seconds())
		}
	}
	if !first.IsZero() && !last.IsZero() {
		r.Seconds = last.Sub(first).Seconds()
	}
	r.WallTime, r.ClientSeen, r.ClientExitSeen, r.Finished = summarise(wall), summarise(seen), summarise(exitSeen), summarise(finished)
	r.States = st

	rpc := RPCFigures{Ctld: in.Ctld, Dbd: in.Dbd, ParentCtld: in.Ctld.ByUser[in.ParentUser],
		ParentDbd: in.Dbd.ByUser[in.ParentUser], Submits: in.Ctld.ByType["REQUEST_SUBMIT_BATCH_JOB"],
		WatchedJobMinutes: watched.Minutes()}
	if rpc.WatchedJobMinutes > 0 {
		rpc.PerJobMinute = float64(rpc.ParentCtld) / rpc.WatchedJobMinutes
		rpc.PollPerJobMinute = float64(rpc.ParentCtld-rpc.Submits) / rpc.WatchedJobMinutes
		rpc.DbdPerJobMinute = float64(rpc.ParentDbd) / rpc.WatchedJobMinutes
	}
	r.RPC = rpc
	r.Samples = runningAt(in.Samples, in.Slurm)
	r.Memory = memFigures(in.Baseline, r.Samples)
	return r, nil
}

// runningAt sets each sample's Running: the jobs whose accounting start is
// at or before it and whose end is after it (sacct's times are whole
// seconds).
func runningAt(samples []Sample, jobs []SlurmJob) []Sample {
	out := slices.Clone(samples)
	for i := range out {
		n := 0
		for _, j := range jobs {
			if !j.Start.IsZero() && !j.Start.After(out[i].At) && (j.End.IsZero() || j.End.After(out[i].At)) {
				n++
			}
		}
		out[i].Running = n
	}
	return out
}

func memFigures(base Sample, samples []Sample) MemFigures {
	m := MemFigures{BaselineProcesses: base.Processes, BaselinePrivateMiB: mib(base.PrivateKiB)}
	for _, s := range samples {
		m.PeakRunning = max(m.PeakRunning, s.Running)
		m.MaxProcesses = max(m.MaxProcesses, s.Processes)
	}
	if m.PeakRunning == 0 {
		return m
	}
	var procs, priv, parents, oprocs, opriv []float64
	for _, s := range samples {
		if s.Running == m.PeakRunning {
			procs = append(procs, float64(s.Processes))
			priv = append(priv, float64(s.PrivateKiB))
			parents = append(parents, float64(s.ParentsKiB))
			op, ok := s.others()
			oprocs = append(oprocs, float64(op))
			opriv = append(opriv, float64(ok))
		}
	}
	n := float64(m.PeakRunning)
	m.PeakProcesses = summarise(procs).Median
	m.PeakPrivateMiB = summarise(priv).Median / 1024
	m.ProcessesPerJob = (m.PeakProcesses - float64(base.Processes)) / n
	m.PrivateMiBPerJob = (m.PeakPrivateMiB - m.BaselinePrivateMiB) / n
	m.BaselineParentsMiB = mib(base.ParentsKiB)
	m.PeakParentsMiB = summarise(parents).Median / 1024
	bp, bk := base.others()
	m.OthersProcessesPerJob = (summarise(oprocs).Median - float64(bp)) / n
	m.OthersMiBPerJob = (summarise(opriv).Median/1024 - mib(bk)) / n
	m.BaselineParents = base.Parents
	// Each field the median of the peak's samples.
	med := func(field func(ParentMemory) int64) int64 {
		var v []float64
		for _, s := range samples {
			if s.Running == m.PeakRunning {
				v = append(v, float64(field(s.Parents)))
			}
		}
		return int64(summarise(v).Median)
	}
	m.PeakParents = ParentMemory{
		Threads:         int(med(func(p ParentMemory) int64 { return int64(p.Threads) })),
		ThreadStacksKiB: med(func(p ParentMemory) int64 { return p.ThreadStacksKiB }),
		ArenasKiB:       med(func(p ParentMemory) int64 { return p.ArenasKiB }),
		Arenas:          int(med(func(p ParentMemory) int64 { return int64(p.Arenas) })),
		HeapKiB:         med(func(p ParentMemory) int64 { return p.HeapKiB }),
		OtherAnonKiB:    med(func(p ParentMemory) int64 { return p.OtherAnonKiB }),
		FilesKiB:        med(func(p ParentMemory) int64 { return p.FilesKiB }),
	}
	return m
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

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
	// Where the parents' memory is: a thread per job with 16 KiB of stack,
	// the second peak sample with more heap than the first.
	in.Baseline.Parents = ParentMemory{Threads: 30, ThreadStacksKiB: 480, HeapKiB: 50 << 10}
	in.Samples[0].Parents = ParentMemory{Threads: 30 + n, ThreadStacksKiB: int64(30+n) * 16, HeapKiB: 60 << 10}
	in.Samples[1].Parents = ParentMemory{Threads: 30 + n, ThreadStacksKiB: int64(30+n) * 16, HeapKiB: 62 << 10}
	in.Samples[2].Parents = ParentMemory{Threads: 1000, HeapKiB: 1 << 30} // after the peak: not counted
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
	if want := (ParentMemory{Threads: 40, ThreadStacksKiB: 40 * 16, HeapKiB: 61 << 10}); r.Memory.PeakParents != want || r.Memory.BaselineParents != in.Baseline.Parents {
		t.Errorf("parents idle %+v, at the peak %+v; want %+v, %+v", r.Memory.BaselineParents, r.Memory.PeakParents, in.Baseline.Parents, want)
	}
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
	// An End cut to whole seconds before the worker's exit: the exit, the
	// later of the two, is the end (seen 3 s after it), not the End (3.6 s).
	for i := range in.Slurm {
		in.Slurm[i].End = in.WorkerExit[in.Jobs[i/2].JobID][ClientSite].Add(-600 * time.Millisecond)
	}
	if r, err = Analyze(in); err != nil || r.ClientSeen.N != 4 || math.Abs(r.ClientSeen.Max-3) > 1e-6 {
		t.Errorf("End before the exit: client seen %+v (%v), want 4 jobs, max 3 s from the exit", r.ClientSeen, err)
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
