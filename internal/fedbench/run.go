package fedbench

import (
	"fmt"
	"slices"
	"sort"
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
						seen = append(seen, cs.At.Sub(sj.End).Seconds())
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
