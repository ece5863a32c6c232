package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/procbench"
	"github.com/flare-slurm/flare-slurm/runtime/slurmtest"
)

// benchEnv names the document `make bench-federation` writes its table and
// result into (docs/performance.md); without it the benchmark is skipped.
const benchEnv = "FLARE_SLURM_BENCH_FEDERATION"

// benchConfig is the benchmark's shape. Every field has a default; the
// FLARE_SLURM_BENCH_* variables change it for a quicker look.
type benchConfig struct {
	sizes        []int         // concurrent NVFlare jobs per run (FLARE_SLURM_BENCH_SIZES, "1,10,50")
	poll         int           // both launchers' poll_interval, seconds (FLARE_SLURM_BENCH_POLL)
	rounds       int           // FL rounds per job (FLARE_SLURM_BENCH_ROUNDS)
	trainSeconds float64       // a client's training time per round (FLARE_SLURM_BENCH_TRAIN)
	limit        time.Duration // the whole benchmark (FLARE_SLURM_BENCH_LIMIT)
	jsonOut      string        // the full result with every sample (FLARE_SLURM_BENCH_JSON)
	tracemalloc  string        // a host directory for the parents' allocation sites (FLARE_SLURM_BENCH_TRACEMALLOC)
}

func benchConfigFromEnv(t *testing.T) benchConfig {
	cfg := benchConfig{sizes: []int{1, 10, 50}, poll: 10, rounds: 1, trainSeconds: 30, limit: 14*time.Minute + 30*time.Second}
	if v := os.Getenv("FLARE_SLURM_BENCH_SIZES"); v != "" {
		cfg.sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				t.Fatalf("FLARE_SLURM_BENCH_SIZES=%q: want numbers of jobs, e.g. 1,10,50", v)
			}
			cfg.sizes = append(cfg.sizes, n)
		}
	}
	for _, v := range []struct {
		name string
		dst  any
	}{{"FLARE_SLURM_BENCH_POLL", &cfg.poll}, {"FLARE_SLURM_BENCH_ROUNDS", &cfg.rounds},
		{"FLARE_SLURM_BENCH_TRAIN", &cfg.trainSeconds}, {"FLARE_SLURM_BENCH_LIMIT", &cfg.limit}} {
		s := os.Getenv(v.name)
		if s == "" {
			continue
		}
		var err error
		switch d := v.dst.(type) {
		case *int:
			*d, err = strconv.Atoi(s)
		case *float64:
			*d, err = strconv.ParseFloat(s, 64)
		case *time.Duration:
			*d, err = time.ParseDuration(s)
		}
		if err != nil {
			t.Fatalf("%s=%q: %v", v.name, s, err)
		}
	}
	cfg.jsonOut = os.Getenv("FLARE_SLURM_BENCH_JSON")
	cfg.tracemalloc = os.Getenv("FLARE_SLURM_BENCH_TRACEMALLOC")
	return cfg
}

// TestFederationBenchmark is `make bench-federation` (issue 27): one
// provisioned federation (the server, named after the login side, and
// site-1), its kits prepared twice from the same slurm.yaml — with NVFlare's
// own SlurmJobLauncher (prepare's default) and with --launcher flare-slurm —
// and the same hello-numpy-based job submitted 1, 10 and 50 times at once
// through NVFlare's admin API to each. Per run it reads slurmctld's and
// slurmdbd's RPC counters (reset before the run, read right after the last
// job FINISHED), NVFlare's own times, the parents' logs, the workers' exit
// times, the parent host's processes and memory (every second) and
// accounting, and writes the table and a JSON result into the document
// named by FLARE_SLURM_BENCH_FEDERATION (fedbench_*_test.go, docs/performance.md).
//
// The runs alternate the launchers (NVFlare first for 1 job, flare-slurm
// first for 10, NVFlare first for 50) so that a drift of the machine's load
// does not favour one, each on parents started for it. Every worker runs on the three-node partition,
// oversubscribed so that 100 workers fit; the benchmark holds the cluster
// exclusively (sdiag's counters are the cluster's), runs its own Slurm
// queries as root (the parents' account's RPCs are the launchers' alone),
// and stops the parents and cancels whatever is left in its partition.
func TestFederationBenchmark(t *testing.T) {
	doc := os.Getenv(benchEnv)
	if doc == "" {
		t.Skipf("the federation benchmark runs with %s=docs/performance.md (make bench-federation)", benchEnv)
	}
	cfg := benchConfigFromEnv(t)
	c := slurmtest.RequireExclusive(t)
	started := time.Now()
	nodes := c.MultiNodes(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.limit)
	defer cancel()

	maxSize := 1
	for _, n := range cfg.sizes {
		maxSize = max(maxSize, n)
	}
	f := provisionFederation(t, c, ctx, maxSize)
	f.parentEnv = []string{"TZ=UTC"} // the parents' log times, read as UTC
	traced := ""
	if cfg.tracemalloc != "" {
		traced = traceParents(t, c, f)
	}
	f.dumpJobs = 10
	b := &bench{t: t, c: c, f: f, cfg: cfg, ctx: ctx, doc: doc}
	b.setUp(nodes, maxSize)

	var runs []Run
	launchers := [2]string{NVFlare, FlareSlurm}
	var todo []int // the sizes of the runs still to come, one per run
	for _, n := range cfg.sizes {
		todo = append(todo, n, n)
	}
	took := runCosts{}
	for i, n := range cfg.sizes {
		order := launchers
		if i%2 == 1 {
			order = [2]string{launchers[1], launchers[0]}
		}
		for _, l := range order {
			// Parents started for each run: the same idle state for both
			// launchers (Python keeps what an earlier run allocated).
			stopping := time.Now()
			f.stop()
			stopped := time.Since(stopping) // the next run's stop is this run's cost
			b.settle(settleBudget(ctx, took, todo))
			began := time.Now()
			b.startParents(l)
			r := b.run(l, n)
			took.add(n, time.Since(began)+stopped)
			todo = todo[1:]
			t.Logf("%s, %d jobs: %s (%.0f s with its parents' start and readings)", l, n, Summary(r), time.Since(began).Seconds())
			runs = append(runs, r)
		}
	}
	f.stop()

	res := Result{
		Command:      "make bench-federation",
		Date:         started.UTC().Format(time.RFC3339),
		Minutes:      time.Since(started).Minutes(),
		Machine:      b.machine(),
		PollInterval: float64(cfg.poll),
		Rounds:       cfg.rounds,
		TrainSeconds: cfg.trainSeconds,
		Runs:         runs,
	}
	res.Targets = Targets(res)
	if cfg.jsonOut != "" {
		data, _ := json.MarshalIndent(res, "", " ")
		if err := os.WriteFile(cfg.jsonOut, append(data, '\n'), 0o644); err != nil {
			t.Errorf("writing %s: %v", cfg.jsonOut, err)
		}
	}
	if traced != "" {
		// tracemalloc slows the parents and adds to their memory: the
		// figures are not the launchers' and go into no document.
		if err := os.CopyFS(cfg.tracemalloc, os.DirFS(c.HostPath(traced))); err != nil {
			t.Errorf("copying the parents' allocation sites to %s: %v", cfg.tracemalloc, err)
		}
		t.Logf("the parents' allocation sites are in %s (compare them: python3 testdata/federation/tracemalloc/compare.py %s); %s is not written", cfg.tracemalloc, cfg.tracemalloc, doc)
	} else if err := UpdateDoc(doc, res); err != nil {
		t.Errorf("writing the result into %s: %v", doc, err)
	}
	t.Logf("\n%s", Markdown(res))
	for _, r := range runs {
		if r.States.Lost > 0 || r.States.Misread > 0 {
			t.Errorf("%s, %d jobs: %d lost, %d misread: %v", r.Launcher, r.Jobs, r.States.Lost, r.States.Misread, r.States.Notes)
		}
	}
}

// traceParents makes every NVFlare parent trace its Python allocations
// (testdata/federation/tracemalloc/sitecustomize.py, first on their
// PYTHONPATH) into a directory inside the root, which it returns.
func traceParents(t *testing.T, c *slurmtest.Cluster, f *federation) string {
	hook, out := path.Join(f.base, "tracemalloc"), path.Join(f.base, "tracemalloc-sites")
	c.Mkdir(t, hook, 0o755)
	c.Mkdir(t, out, 0o755)
	c.CopyIn(t, filepath.Join("testdata", "federation", "tracemalloc", "sitecustomize.py"), path.Join(hook, "sitecustomize.py"))
	f.parentEnv = append(f.parentEnv, "PYTHONPATH="+hook+":"+c.NVFlareRoot(t), "FLARE_SLURM_BENCH_TM_DIR="+out)
	return out
}

// settle waits, before each run, until the machine is quiet: at most as
// many runnable threads as CPUs (/proc/loadavg's fourth field, this reader
// included) in 5 samples running, a second apart, and the one-minute load
// average at most settleLoad, for at most budget (settleBudget). The run
// before leaves its parents' exits, slurmdbd's writes and the page cache's
// writeback behind; without the wait the second launcher of a size started
// into them (load 10.7 against 5.9 at 50 jobs), and with the first rule
// alone still at load 3.6 against 1.1 (2026-12-05).
func (b *bench) settle(budget time.Duration) {
	quiet, start := 0, time.Now()
	for (quiet < 5 || loadOne() > settleLoad) && time.Since(start) < budget && b.ctx.Err() == nil {
		data, err := os.ReadFile("/proc/loadavg")
		fields := strings.Fields(string(data))
		if err != nil || len(fields) < 4 {
			b.t.Logf("settle: cannot read /proc/loadavg (%v); not waiting", err)
			return
		}
		running, _, _ := strings.Cut(fields[3], "/")
		if n, err := strconv.Atoi(running); err == nil && n <= runtime.NumCPU() {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(time.Second)
	}
	b.t.Logf("settle: %.0f s until quiet (5 s with at most %d runnable threads, one-minute load at most %g, or %.0f s; load %s)",
		time.Since(start).Seconds(), runtime.NumCPU(), settleLoad, budget.Seconds(), loadAvg())
}

// settle's bounds: the one-minute load average a run starts at, and the
// longest wait for it. At 1.5 the wait before the second run of 50 jobs
// took 116 s (2026-12-05T19:00Z).
const (
	settleLoad  = 2.0
	settleLimit = 100 * time.Second
)

// settleBudget is how long the settle before the next run may wait: at
// most settleLimit, and never into the time the runs still to come need
// (todo, this one first: runCosts' estimates) and benchFinish. Without
// it, six waits for a machine that other work kept busy took 268 s and
// the benchmark's own limit cut off its last run (2026-12-06T01:08Z).
func settleBudget(ctx context.Context, took runCosts, todo []int) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return settleLimit
	}
	spare := time.Until(d) - benchFinish
	for _, n := range todo {
		spare -= took.estimate(n)
	}
	return min(settleLimit, max(0, spare))
}

// benchFinish is what the benchmark needs after its last run: stopping the
// parents and writing the result.
const benchFinish = 30 * time.Second

// runCosts are the measured times of the runs so far, from the parents'
// start to the last reading, and a stop of parents (the one before the
// run, standing for the one after it), by size: the longest run of each
// size.
type runCosts map[int]time.Duration

func (c runCosts) add(n int, d time.Duration) { c[n] = max(c[n], d) }

// estimate is how long a run of n jobs will take: a tenth more than the
// longest run of that size so far, or before any (the first launcher of a
// size) 60 s and 2 s a job, above every run measured at 63f6e02
// (2026-12-06T03:04Z, one round of 30 s): 52, 71 and 123 s from the
// parents' start to the last reading for 1, 10 and 50 jobs.
func (c runCosts) estimate(n int) time.Duration {
	if d, ok := c[n]; ok {
		return d + d/10
	}
	return 60*time.Second + time.Duration(n)*2*time.Second
}

// loadOne is the one-minute load average (0 when unreadable).
func loadOne() float64 {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 1 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// bench is one benchmark's federation, partition and workspaces.
type bench struct {
	t       *testing.T
	c       *slurmtest.Cluster
	f       *federation
	cfg     benchConfig
	ctx     context.Context
	part    string               // the benchmark's partition
	exits   string               // where the workers' exit times go
	ws      map[string][2]string // launcher → server, client workspace
	job     string               // the job folder
	nparent int                  // parents started so far (their log names)
	doc     string               // the document it writes
}

// setUp creates the partition, the workers' interpreter that records their
// exit, both launchers' workspaces and the job.
func (b *bench) setUp(nodes slurmtest.Nodes, maxSize int) {
	t, c, f := b.t, b.c, b.f
	r := make([]byte, 4)
	rand.Read(r)
	b.part = "flbench" + hex.EncodeToString(r)
	// Two workers per job on 3 nodes of 4 CPUs: OverSubscribe lets each CPU
	// hold several jobs (cgroups are off: nothing is enforced anyway).
	share := max(1, (2*maxSize+11)/12)
	if out, err := c.RootCommand(b.ctx, "scontrol", "create", "PartitionName="+b.part, "Nodes="+strings.Join(nodes.Names, ","),
		"OverSubscribe=FORCE:"+strconv.Itoa(share), "State=UP", "MaxTime=INFINITE").CombinedOutput(); err != nil {
		t.Fatalf("scontrol create partition: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.RootCommand(ctx, "scancel", "--partition="+b.part).Run()
		for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			out, err := c.RootCommand(ctx, "squeue", "-h", "--partition="+b.part, "-o", "%i").Output()
			if err == nil && strings.TrimSpace(string(out)) == "" {
				break
			}
		}
		c.RootCommand(ctx, "scontrol", "delete", "PartitionName="+b.part).Run()
	})

	b.exits = path.Join(f.base, "exits")
	c.Mkdir(t, b.exits, 0o700)
	python := path.Join(f.base, "python-bench")
	c.WriteFile(t, python, []byte(fmt.Sprintf(`#!/bin/sh
# The benchmark's workers' interpreter: NVFlare on the path, and the time
# the worker's Python exited recorded as WORKSPACE.JOB (its run dir).
export PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}
/usr/bin/python3 "$@"
rc=$?
date +%%s.%%N > %s/"$(basename "$(dirname "$PWD")").$(basename "$PWD")"
exit $rc
`, c.NVFlareRoot(t), b.exits)), 0o700)
	workers := "sandbox: none\n  python_path: " + python
	b.ws = map[string][2]string{}
	for _, l := range []string{NVFlare, FlareSlurm} {
		o := fedPrepare{launcher: l, poll: b.cfg.poll}
		o.wsName = "ws-" + l + "-server"
		server := f.prepare(b.ctx, f.bin, c.LoginHost, "server", workers, b.part, o)
		o.wsName = "ws-" + l + "-site-1"
		client := f.prepare(b.ctx, f.bin, "site-1", "site-1", workers, b.part, o)
		b.ws[l] = [2]string{server, client}
	}
	b.job = f.makeJob(b.ctx, "bench", "bench_client.py", b.cfg.rounds, nil,
		fmt.Sprintf("--update_type full --train_seconds %g", b.cfg.trainSeconds))
}

// startParents starts the launcher's server and client parents and waits
// until the client has registered.
func (b *bench) startParents(launcher string) {
	b.nparent++
	f := b.f
	f.server, f.client = b.ws[launcher][0], b.ws[launcher][1]
	name := fmt.Sprintf("%s-%d", launcher, b.nparent)
	f.startServerThenClient(b.ctx, "server-"+name, "site-1-"+name)
}

// rootOut runs a command as root inside the cluster's root and returns its
// output; env is added to its environment.
func (b *bench) rootOut(env []string, name string, args ...string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	cmd := b.c.RootCommand(ctx, name, args...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitQuiet waits until nothing is left in the benchmark's partition, so
// that no earlier job's messages reach this run's counters.
func (b *bench) waitQuiet() {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out := b.rootOut(nil, "squeue", "-h", "--partition="+b.part, "-o", "%i %T")
		if strings.TrimSpace(out) == "" {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("jobs still in partition %s after 3 minutes:\n%s", b.part, out)
		}
		time.Sleep(2 * time.Second)
	}
}

// sessions are the running parents' sessions (each is a session leader).
func (b *bench) sessions() []int {
	var s []int
	for _, p := range b.f.parents {
		s = append(s, p.Process.Pid)
	}
	return s
}

// run submits n jobs to the running parents and measures the run.
func (b *bench) run(launcher string, n int) Run {
	t, c, f := b.t, b.c, b.f
	b.waitQuiet()
	// Let the parents settle after their start or the previous run.
	time.Sleep(5 * time.Second)
	base, err := SampleSessions(b.sessions())
	if err != nil {
		t.Fatal(err)
	}
	b.rootOut(nil, "sdiag", "-r")
	b.rootOut(nil, "sacctmgr", "-i", "clear", "stats")
	in := Input{Launcher: launcher, PollInterval: float64(b.cfg.poll), ParentUser: c.TestUser,
		Baseline: base, LoadStart: procbench.Load(), Start: time.Now()}

	// The parent host, every second, until the admin script is done.
	var (
		mu      sync.Mutex
		samples []Sample
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				s, err := SampleSessions(b.sessions())
				if err == nil {
					s.Seconds = s.At.Sub(in.Start).Seconds()
					mu.Lock()
					samples = append(samples, s)
					mu.Unlock()
				}
			}
		}
	}()

	out := path.Join(f.base, fmt.Sprintf("admin-%s-%d.json", launcher, n))
	deadline := time.Until(time.Now().Add(10 * time.Minute))
	if d, ok := b.ctx.Deadline(); ok {
		deadline = time.Until(d) - time.Minute
	}
	admin := c.PythonCommand(b.ctx, t, path.Join(f.base, "bench_admin.py"), f.admin, b.job, strconv.Itoa(n),
		strconv.Itoa(int(deadline.Seconds())), out)
	var stderr strings.Builder
	admin.Stderr = &stderr
	if adminOut, err := admin.Output(); err != nil {
		close(stop)
		t.Fatalf("bench_admin.py (%s, %d jobs): %v\n%s\n%s", launcher, n, err, adminOut, stderr.String())
	}
	in.End = time.Now()
	// The counters first: the harness's own queries below run as root.
	ctld, err := ParseRPCStats(b.rootOut(nil, "sdiag"))
	if err != nil {
		t.Fatalf("sdiag: %v", err)
	}
	dbd, err := ParseRPCStats(b.rootOut(nil, "sacctmgr", "show", "stats"))
	if err != nil {
		t.Fatalf("sacctmgr show stats: %v", err)
	}
	close(stop)
	<-sampled
	in.Ctld, in.Dbd, in.Samples, in.LoadEnd = ctld, dbd, samples, procbench.Load()

	var report struct {
		Jobs       []JobMeta `json:"jobs"`
		Unfinished []string  `json:"unfinished"`
	}
	if err := json.Unmarshal([]byte(readRoot(t, c, out)), &report); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	in.Jobs = report.Jobs
	if len(report.Unfinished) > 0 {
		t.Errorf("%s, %d jobs: %d not FINISHED before the deadline: %v", launcher, n, len(report.Unfinished), report.Unfinished)
	}
	in.Slurm = b.accounting(report.Jobs)
	seen, err := ParseClientSeen([]byte(readRoot(t, c, path.Join(f.client, "log.txt"))), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	in.ClientSeen = seen
	in.WorkerExit = b.workerExits(launcher, report.Jobs)
	in.SlurmEnd = b.jobEnds()
	r, err := Analyze(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// accounting waits until accounting has a final record of both workers of
// every job (up to two minutes) and returns the records.
func (b *bench) accounting(jobs []JobMeta) []SlurmJob {
	want := map[string]bool{}
	for _, j := range jobs {
		want[SlurmJobName(ServerSite, j.JobID)] = true
		want[SlurmJobName(ClientSite, j.JobID)] = true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := b.rootOut([]string{"SLURM_TIME_FORMAT=%s"}, "sacct", "-X", "-n", "-P", "--allusers", "--starttime=now-3hours",
			"--partition="+b.part, "--format="+SacctFormat)
		all, err := ParseSacct(out)
		if err != nil {
			b.t.Fatal(err)
		}
		var mine []SlurmJob
		done := 0
		for _, j := range all {
			if want[j.Name] {
				mine = append(mine, j)
				if j.Terminal() {
					done++
				}
			}
		}
		if done == len(want) || time.Now().After(deadline) {
			return mine
		}
		time.Sleep(2 * time.Second)
	}
}

// workerExits reads the exit times the workers' interpreter recorded.
func (b *bench) workerExits(launcher string, jobs []JobMeta) map[string]map[string]time.Time {
	out := map[string]map[string]time.Time{}
	for i, site := range []string{ServerSite, ClientSite} {
		wsBase := path.Base(b.ws[launcher][i])
		for _, j := range jobs {
			data, err := os.ReadFile(b.c.HostPath(path.Join(b.exits, wsBase+"."+j.JobID)))
			if err != nil {
				continue
			}
			sec, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
			if err != nil {
				continue
			}
			if out[j.JobID] == nil {
				out[j.JobID] = map[string]time.Time{}
			}
			whole := int64(sec)
			out[j.JobID][site] = time.Unix(whole, int64((sec-float64(whole))*1e9))
		}
	}
	return out
}

// jobEnds reads when slurmctld recorded each job's end, from its log
// (cluster.sh's state dir, FLARE_SLURM_STATE, on the host; the daemons log
// in the root's time zone). It logs and returns nothing when it cannot.
func (b *bench) jobEnds() map[string]time.Time {
	state := os.Getenv("FLARE_SLURM_STATE")
	if state == "" {
		state = "/run/flare-slurm"
	}
	data, err := os.ReadFile(filepath.Join(state, "log", "slurmctld.log"))
	if err != nil {
		b.t.Logf("no job ends from slurmctld's log: %v", err)
		return nil
	}
	loc := time.UTC
	if tz, err := os.ReadFile(b.c.HostPath("/etc/localtime")); err == nil {
		if l, err := time.LoadLocationFromTZData("root", tz); err == nil {
			loc = l
		}
	}
	return ParseJobEnds(data, loc)
}

// machine describes where the benchmark ran.
func (b *bench) machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Slurm: b.c.SlurmVersion, Go: runtime.Version()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				m.MemGiB = float64(kb) / (1 << 20)
			}
		}
	}
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", filepath.Join("..", ".."), "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	// The document the benchmark writes does not count as a change.
	args := []string{"-C", filepath.Join("..", ".."), "status", "--porcelain", "--untracked-files=no", "--", "."}
	if root, err := filepath.Abs(filepath.Join("..", "..")); err == nil {
		if rel, err := filepath.Rel(root, b.doc); err == nil && !strings.HasPrefix(rel, "..") {
			args = append(args, ":(exclude)"+rel)
		}
	}
	if out, err := exec.Command("git", args...).Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
		m.Commit += "+changes"
	}
	return m
}

// TestSettleBudget: the settle before a run never waits into the time the
// runs still to come need (estimated before a size has run, measured
// after) plus the finish, never longer than settleLimit, and not at all
// once that time is gone.
func TestSettleBudget(t *testing.T) {
	in := func(d time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(d))
		t.Cleanup(cancel)
		return ctx
	}
	near := func(got, want time.Duration) bool { return got <= want && got > want-5*time.Second }

	if got := settleBudget(context.Background(), runCosts{}, []int{50}); got != settleLimit {
		t.Errorf("no deadline: %v, want settleLimit %v", got, settleLimit)
	}
	// 10 minutes left, two runs of 50 jobs to come, none measured.
	want := 10*time.Minute - benchFinish - 2*runCosts{}.estimate(50)
	if got := settleBudget(in(10*time.Minute), runCosts{}, []int{50, 50}); !near(got, min(settleLimit, want)) {
		t.Errorf("10 min left, 50 and 50 to come: %v, want %v", got, min(settleLimit, want))
	}
	// The same with the first run of 50 measured at 4 minutes: the second
	// needs a tenth more, and the budget is what is left.
	took := runCosts{}
	took.add(50, 3*time.Minute)
	took.add(50, 4*time.Minute)
	took.add(10, time.Minute)
	if got := took.estimate(50); got != 4*time.Minute+24*time.Second {
		t.Errorf("estimate(50) after runs of 3 and 4 min = %v, want 4m24s (the longest and a tenth)", got)
	}
	if got := settleBudget(in(5*time.Minute+40*time.Second), took, []int{50}); !near(got, 5*time.Minute+40*time.Second-benchFinish-took.estimate(50)) {
		t.Errorf("5m40s left, one run of 50 measured at 4 min: %v, want %v", got, 5*time.Minute+40*time.Second-benchFinish-took.estimate(50))
	}
	if got := settleBudget(in(4*time.Minute), took, []int{50}); got != 0 {
		t.Errorf("4 min left, a run of 50 needing 4m24s: %v, want 0 (no wait)", got)
	}
	prior := runCosts{}
	if prior.estimate(1) < prior.estimate(0) || prior.estimate(50) <= prior.estimate(10) {
		t.Errorf("the estimate before a size has run does not grow with the jobs: 1 → %v, 10 → %v, 50 → %v",
			prior.estimate(1), prior.estimate(10), prior.estimate(50))
	}
}
