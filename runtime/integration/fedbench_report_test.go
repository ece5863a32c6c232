package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Result is one `make bench-federation`: where and how it ran, every run's
// figures, and the targets with both launchers' figures.
type Result struct {
	Command      string   `json:"command"`
	Date         string   `json:"date"`
	Minutes      float64  `json:"minutes"`
	Machine      Machine  `json:"machine"`
	PollInterval float64  `json:"poll_interval_s"`
	Rounds       int      `json:"rounds"`
	TrainSeconds float64  `json:"train_seconds_per_round"`
	Runs         []Run    `json:"runs"`
	Targets      []Target `json:"targets"`
}

// Machine is where the benchmark ran.
type Machine struct {
	CPUs   int     `json:"cpus"`
	MemGiB float64 `json:"mem_gib"`
	Kernel string  `json:"kernel"`
	Slurm  string  `json:"slurm"`
	Go     string  `json:"go"`
	Commit string  `json:"commit"` // of flare-slurm; "+changes" when the tree differed
}

// Target is one of issue 27's targets with both launchers' figures.
type Target struct {
	Name       string `json:"name"`
	Target     string `json:"target"`
	NVFlare    string `json:"nvflare"`
	FlareSlurm string `json:"flare_slurm"`
	Met        bool   `json:"met"`
}

// find returns the run of launcher with n jobs.
func (res Result) find(launcher string, n int) (Run, bool) {
	for _, r := range res.Runs {
		if r.Launcher == launcher && r.Jobs == n {
			return r, true
		}
	}
	return Run{}, false
}

// largest is the largest number of jobs both launchers ran.
func (res Result) largest() int {
	n := 0
	for _, r := range res.Runs {
		if _, ok := res.find(otherLauncher(r.Launcher), r.Jobs); ok {
			n = max(n, r.Jobs)
		}
	}
	return n
}

func otherLauncher(l string) string {
	if l == NVFlare {
		return FlareSlurm
	}
	return NVFlare
}

// Targets are issue 27's targets, judged at the largest run both launchers
// made (50 jobs), except the latency target, judged on every run:
//   - the parents' slurmctld RPCs per watched job per minute: flare-slurm's
//     at most a tenth of NVFlare's;
//   - the jobs' median wall time: flare-slurm's at most 5 % above NVFlare's;
//   - a client worker's end seen by its parent within one poll interval
//     (every job of every run);
//   - the parent host's private memory per running job: flare-slurm's at
//     most NVFlare's.
func Targets(res Result) []Target {
	n := res.largest()
	nv, ok1 := res.find(NVFlare, n)
	fs, ok2 := res.find(FlareSlurm, n)
	if !ok1 || !ok2 {
		return nil
	}
	at := fmt.Sprintf(" (%d jobs)", n)
	var ts []Target
	ts = append(ts, Target{
		Name:       "scheduler RPCs per watched job per minute, without the submissions (the same for both)" + at,
		Target:     "flare-slurm <= NVFlare / 10",
		NVFlare:    fmt.Sprintf("%.2f", nv.RPC.PollPerJobMinute),
		FlareSlurm: fmt.Sprintf("%.2f: 1/%.1f", fs.RPC.PollPerJobMinute, ratio(nv.RPC.PollPerJobMinute, fs.RPC.PollPerJobMinute)),
		Met:        fs.RPC.PollPerJobMinute <= nv.RPC.PollPerJobMinute/10,
	}, Target{
		Name:       "scheduler RPCs per watched job per minute, all" + at,
		Target:     "flare-slurm <= NVFlare / 10",
		NVFlare:    fmt.Sprintf("%.2f", nv.RPC.PerJobMinute),
		FlareSlurm: fmt.Sprintf("%.2f: 1/%.1f", fs.RPC.PerJobMinute, ratio(nv.RPC.PerJobMinute, fs.RPC.PerJobMinute)),
		Met:        fs.RPC.PerJobMinute <= nv.RPC.PerJobMinute/10,
	})
	ts = append(ts, Target{
		Name:       "job wall time, median" + at,
		Target:     "flare-slurm <= 1.05 × NVFlare",
		NVFlare:    fmt.Sprintf("%.1f s (p95 %.1f s)", nv.WallTime.Median, nv.WallTime.P95),
		FlareSlurm: fmt.Sprintf("%.1f s (p95 %.1f s): %+.1f %%", fs.WallTime.Median, fs.WallTime.P95, 100*(fs.WallTime.Median/nv.WallTime.Median-1)),
		Met:        fs.WallTime.Median <= 1.05*nv.WallTime.Median,
	})
	worst := map[string][2]Dist{} // from the Slurm job's end, from the worker's exit
	fromAcct := map[string]int{}
	for _, r := range res.Runs {
		fromAcct[r.Launcher] += r.ClientEndsFromAccounting
		d := worst[r.Launcher]
		for i, x := range []Dist{r.ClientSeen, r.ClientExitSeen} {
			d[i].Max = max(d[i].Max, x.Max)
			d[i].P95 = max(d[i].P95, x.P95)
			d[i].N += x.N
		}
		worst[r.Launcher] = d
	}
	seen := func(l string) string {
		d := worst[l]
		acct := ""
		if n := fromAcct[l]; n > 0 {
			acct = fmt.Sprintf(", %d of them from accounting's End, whole seconds, or the worker's exit where later", n)
		}
		return fmt.Sprintf("max %.1f s, largest p95 %.1f s (%d jobs%s; from the worker's exit: max %.1f s)", d[0].Max, d[0].P95, d[0].N, acct, d[1].Max)
	}
	ts = append(ts, Target{
		Name:       "client's Slurm job end seen by its parent, every run",
		Target:     fmt.Sprintf("<= one poll interval (%g s)", res.PollInterval),
		NVFlare:    seen(NVFlare),
		FlareSlurm: seen(FlareSlurm),
		Met:        worst[FlareSlurm][0].N > 0 && worst[FlareSlurm][0].Max <= res.PollInterval,
	})
	mem := func(m MemFigures) string {
		return fmt.Sprintf("%.2f MiB, %.2f processes (what the parents started: %.2f MiB, %.2f processes; the parents idle %.0f MiB)",
			m.PrivateMiBPerJob, m.ProcessesPerJob, m.OthersMiBPerJob, m.OthersProcessesPerJob, m.BaselineParentsMiB)
	}
	ts = append(ts, Target{
		Name:       "parent host private memory per running job" + at,
		Target:     "flare-slurm <= NVFlare",
		NVFlare:    mem(nv.Memory),
		FlareSlurm: mem(fs.Memory),
		Met:        fs.Memory.PrivateMiBPerJob <= nv.Memory.PrivateMiBPerJob,
	})
	return ts
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Summary is one line about a run, for the test's log.
func Summary(r Run) string {
	return fmt.Sprintf("wall %.1f/%.1f s, client Slurm end seen %.1f/%.1f s (max %.1f), parent RPCs %d ctld %d dbd (%.2f/job-min), "+
		"%.2f MiB and %.2f processes per running job (started by the parents %.2f MiB, %.2f; peak %d running), states %v %v, lost %d, misread %d",
		r.WallTime.Median, r.WallTime.P95, r.ClientSeen.Median, r.ClientSeen.P95, r.ClientSeen.Max,
		r.RPC.ParentCtld, r.RPC.ParentDbd, r.RPC.PerJobMinute, r.Memory.PrivateMiBPerJob, r.Memory.ProcessesPerJob,
		r.Memory.OthersMiBPerJob, r.Memory.OthersProcessesPerJob,
		r.Memory.PeakRunning, r.States.NVFlare, r.States.Slurm, r.States.Lost, r.States.Misread)
}

// Markdown is the result as docs/performance.md shows it: how it ran, one
// row per run, the RPCs by type, and the targets.
func Markdown(res Result) string {
	var b strings.Builder
	m := res.Machine
	fmt.Fprintf(&b, "Measured %s by `%s` (%.1f minutes) at flare-slurm %s: Slurm %s on the test cluster, "+
		"%d CPUs, %.0f GiB, Linux %s, %s. Both launchers poll every %g s (their `poll_interval`); each job is %d "+
		"round(s) of hello-numpy with %g s of training per round. The load average (1, 5, 15 min) is the "+
		"machine's at each run's start and end; other work ran on it.\n\n",
		res.Date, res.Command, res.Minutes, m.Commit, m.Slurm, m.CPUs, m.MemGiB, m.Kernel, m.Go,
		res.PollInterval, res.Rounds, res.TrainSeconds)

	b.WriteString("| launcher | jobs | wall time median / p95 | client's Slurm end → seen median / p95 / max (from the worker's exit) | last exit → FINISHED median / p95 | " +
		"parents' RPCs: slurmctld (sbatch) / slurmdbd | per watched job per minute: slurmctld (without sbatch) / slurmdbd | " +
		"parent host per running job (peak running): all / what the parents started | NVFlare parents idle → at peak | final states | load |\n")
	b.WriteString("| --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range res.Runs {
		m := r.Memory
		fmt.Fprintf(&b, "| %s | %d | %.1f / %.1f s | %.1f / %.1f / %.1f s (%.1f / %.1f / %.1f s) | %.1f / %.1f s | %d (%d) / %d | %.2f (%.2f) / %.2f | "+
			"%.2f MiB, %.2f processes / %.2f MiB, %.2f processes (%d) | %.0f → %.0f MiB | %s | %s → %s |\n",
			r.Launcher, r.Jobs, r.WallTime.Median, r.WallTime.P95,
			r.ClientSeen.Median, r.ClientSeen.P95, r.ClientSeen.Max,
			r.ClientExitSeen.Median, r.ClientExitSeen.P95, r.ClientExitSeen.Max,
			r.Finished.Median, r.Finished.P95,
			r.RPC.ParentCtld, r.RPC.Submits, r.RPC.ParentDbd,
			r.RPC.PerJobMinute, r.RPC.PollPerJobMinute, r.RPC.DbdPerJobMinute,
			m.PrivateMiBPerJob, m.ProcessesPerJob, m.OthersMiBPerJob, m.OthersProcessesPerJob, m.PeakRunning,
			m.BaselineParentsMiB, m.PeakParentsMiB,
			states(r.States), r.LoadStart, r.LoadEnd)
	}

	b.WriteString("\nWhere the NVFlare parents' private memory is, idle → at the peak (MiB; /proc/PID/smaps of both parents, " +
		"summed; each kind the median of the peak's samples, so the kinds need not add up to the total): the same Python code for both launchers but for the launcher's module:\n\n" +
		"| launcher | jobs | threads | thread stacks | malloc arenas of threads (how many) | heap (main arena) | other anonymous | files |\n" +
		"| --- | ---: | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range res.Runs {
		a, z := r.Memory.BaselineParents, r.Memory.PeakParents
		fmt.Fprintf(&b, "| %s | %d | %d → %d | %.1f → %.1f | %.1f (%d) → %.1f (%d) | %.1f → %.1f | %.1f → %.1f | %.1f → %.1f |\n",
			r.Launcher, r.Jobs, a.Threads, z.Threads, mib(a.ThreadStacksKiB), mib(z.ThreadStacksKiB),
			mib(a.ArenasKiB), a.Arenas, mib(z.ArenasKiB), z.Arenas, mib(a.HeapKiB), mib(z.HeapKiB),
			mib(a.OtherAnonKiB), mib(z.OtherAnonKiB), mib(a.FilesKiB), mib(z.FilesKiB))
	}

	b.WriteString("\nEvery RPC slurmctld (sdiag) and slurmdbd (`sacctmgr show stats`) counted per run, all users (the " +
		"daemons' own messages about the jobs included); the parents' share is in the table above:\n\n")
	types := map[string]bool{}
	for _, r := range res.Runs {
		for k := range r.RPC.Ctld.ByType {
			types["slurmctld "+k] = true
		}
		for k := range r.RPC.Dbd.ByType {
			types["slurmdbd "+k] = true
		}
	}
	b.WriteString("| RPC |")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, " %s %d |", r.Launcher, r.Jobs)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(res.Runs)) + "\n")
	for _, k := range sortedKeys(types) {
		daemon, typ, _ := strings.Cut(k, " ")
		fmt.Fprintf(&b, "| %s `%s` |", daemon, typ)
		for _, r := range res.Runs {
			s := r.RPC.Ctld
			if daemon == "slurmdbd" {
				s = r.RPC.Dbd
			}
			fmt.Fprintf(&b, " %d |", s.ByType[typ])
		}
		b.WriteString("\n")
	}

	if len(res.Targets) > 0 {
		b.WriteString("\n| target | NVFlare | flare-slurm | met |\n| --- | --- | --- | --- |\n")
		for _, t := range res.Targets {
			met := "yes"
			if !t.Met {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %s: %s | %s | %s | %s |\n", t.Name, t.Target, t.NVFlare, t.FlareSlurm, met)
		}
	}
	return b.String()
}

// states is "50 FINISHED:COMPLETED; 100 COMPLETED", and what did not add up.
func states(s StateFigures) string {
	var parts []string
	for _, k := range sortedKeys(s.NVFlare) {
		parts = append(parts, fmt.Sprintf("%d %s", s.NVFlare[k], k))
	}
	out := strings.Join(parts, ", ")
	parts = nil
	for _, k := range sortedKeys(s.Slurm) {
		parts = append(parts, fmt.Sprintf("%d %s", s.Slurm[k], k))
	}
	out += "; " + strings.Join(parts, ", ")
	if s.Lost > 0 || s.Misread > 0 {
		out += fmt.Sprintf("; **%d lost, %d misread**", s.Lost, s.Misread)
	} else {
		out += "; none lost or misread"
	}
	return out
}

// Doc markers: UpdateDoc replaces what lies between them.
const (
	docBegin = "<!-- bench-federation:begin (written by make bench-federation) -->"
	docEnd   = "<!-- bench-federation:end -->"
)

// docSection is what UpdateDoc puts between the markers: the Markdown and
// the result as JSON, without the per-second samples.
func docSection(res Result) string {
	compact := res
	compact.Runs = slices.Clone(res.Runs)
	for i := range compact.Runs {
		compact.Runs[i].Samples, compact.Runs[i].PerJob = nil, nil
	}
	data, _ := json.MarshalIndent(compact, "", " ")
	return Markdown(res) + "\nThe result as JSON (each job's times and the parent host's samples of every second are in `BENCH_FEDERATION_JSON`):\n\n```json\n" + string(data) + "\n```\n"
}

// UpdateDoc writes res into the document at path, between docBegin and
// docEnd, which must be there once each.
func UpdateDoc(path string, res Result) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceSection(data, docSection(res))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

func replaceSection(doc []byte, section string) ([]byte, error) {
	if bytes.Count(doc, []byte(docBegin)) != 1 || bytes.Count(doc, []byte(docEnd)) != 1 {
		return nil, fmt.Errorf("want %q and %q once each", docBegin, docEnd)
	}
	i := bytes.Index(doc, []byte(docBegin)) + len(docBegin)
	j := bytes.Index(doc, []byte(docEnd))
	if j < i {
		return nil, fmt.Errorf("%q comes before %q", docEnd, docBegin)
	}
	var b bytes.Buffer
	b.Write(doc[:i])
	b.WriteString("\n\n" + strings.TrimSpace(section) + "\n\n")
	b.Write(doc[j:])
	return b.Bytes(), nil
}

func result(t *testing.T) Result {
	t.Helper()
	res := Result{Command: "make bench-federation", PollInterval: 10, Rounds: 1, TrainSeconds: 30}
	for _, c := range []struct {
		launcher string
		n        int
		seen     time.Duration
		extra    int64 // parent RPCs beyond the submissions
		mib      int64 // per running job
	}{
		{NVFlare, 1, 5 * time.Second, 12, 1},
		{FlareSlurm, 1, 4 * time.Second, 3, 2},
		{NVFlare, 10, 5 * time.Second, 120, 1},
		{FlareSlurm, 10, 4 * time.Second, 6, 1},
	} {
		in := synthetic(c.n, c.seen)
		in.Launcher = c.launcher
		in.Ctld.ByUser["flaretest"] = int64(2*c.n) + c.extra
		for i := range in.Samples[:2] {
			in.Samples[i].PrivateKiB = (100 << 10) + int64(2*c.n)*c.mib<<10
			in.Samples[i].ParentsKiB = 90 << 10
		}
		r, err := Analyze(in)
		if err != nil {
			t.Fatal(err)
		}
		res.Runs = append(res.Runs, r)
	}
	res.Targets = Targets(res)
	return res
}

// The targets are judged at the largest run both launchers made, the
// latency on every run.
func TestTargets(t *testing.T) {
	ts := result(t).Targets
	if len(ts) != 5 {
		t.Fatalf("%d targets", len(ts))
	}
	for _, i := range []int{0, 1, 2, 4} {
		if !strings.Contains(ts[i].Name, "(10 jobs)") {
			t.Errorf("target %q not judged at 10 jobs", ts[i].Name)
		}
	}
	// Without the 20 submissions, 6 against 120 RPCs: a twentieth. With
	// them, 26 against 140: more than a tenth.
	if !ts[0].Met || ts[1].Met {
		t.Errorf("RPC targets %+v", ts[:2])
	}
	if !ts[2].Met || !ts[3].Met || !ts[4].Met {
		t.Errorf("targets %+v", ts[2:])
	}
}

func TestUpdateDoc(t *testing.T) {
	res := result(t)
	p := filepath.Join(t.TempDir(), "performance.md")
	doc := "# Performance\n\nbefore\n\n" + docBegin + "\nold table\n" + docEnd + "\n\nafter\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateDoc(p, res); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	out := string(data)
	if strings.Contains(out, "old table") || !strings.HasPrefix(out, "# Performance\n\nbefore\n\n"+docBegin) || !strings.HasSuffix(out, docEnd+"\n\nafter\n") {
		t.Errorf("document:\n%s", out)
	}
	// The JSON block reads back as the result, without the samples.
	i := strings.Index(out, "```json\n")
	j := strings.LastIndex(out, "\n```")
	var back Result
	if i < 0 || j < i || json.Unmarshal([]byte(out[i+8:j]), &back) != nil {
		t.Fatalf("no JSON result in:\n%s", out)
	}
	if len(back.Runs) != 4 || back.Runs[3].RPC.ParentCtld != res.Runs[3].RPC.ParentCtld || back.Runs[0].Samples != nil {
		t.Errorf("JSON result %+v", back.Runs)
	}
	// Twice gives the same document.
	if err := UpdateDoc(p, res); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(p); string(again) != out {
		t.Error("a second update changed the document")
	}
	for name, bad := range map[string]string{
		"no markers":       "# Performance\n",
		"twice":            docBegin + docEnd + docBegin + docEnd,
		"end before begin": docEnd + "\n" + docBegin,
	} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := UpdateDoc(p, res); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Every run is a row; every message type a row of the second table.
func TestMarkdown(t *testing.T) {
	md := Markdown(result(t))
	for _, want := range []string{
		"| nvflare | 1 |", "| flare-slurm | 10 |", "| slurmctld `REQUEST_SUBMIT_BATCH_JOB` | 2 | 2 | 20 | 20 |",
		"| slurmdbd `DBD_GET_JOBS_COND` |", "none lost or misread", "| **no** |",
		// the parents' memory by kind: threads and their stacks, then the heap
		"| flare-slurm | 10 | 30 → 40 | 0.5 → 0.6 | 0.0 (0) → 0.0 (0) | 50.0 → 61.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}
