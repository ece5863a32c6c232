package manager

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// simulateMinute drives every handle's wait loop for one simulated minute
// (poll interval 10 s, ±10 % jitter, start times spread over one interval)
// and returns the scheduler calls the workspace made.
func simulateMinute(tb testing.TB, e *env, hs []*Handle, rng *rand.Rand) (squeue, sacct int) {
	for _, h := range hs {
		h.m.cfg.Jitter = func() float64 { return rng.Float64()*2 - 1 }
	}
	start := e.clock.Now()
	next := make([]time.Time, len(hs))
	for i := range next {
		next[i] = start.Add(time.Duration(rng.Int64N(int64(10 * time.Second))))
	}
	q0, a0 := e.slurm.count("squeue"), e.slurm.count("sacct")
	end := start.Add(time.Minute)
	for {
		i := 0
		for k := range next {
			if next[k].Before(next[i]) {
				i = k
			}
		}
		if !next[i].Before(end) {
			break
		}
		e.clock.mu.Lock()
		e.clock.t = next[i]
		e.clock.mu.Unlock()
		if _, err := hs[i].Poll(context.Background()); err != nil {
			tb.Fatal(err)
		}
		next[i] = next[i].Add(hs[i].m.nextWait())
	}
	return e.slurm.count("squeue") - q0, e.slurm.count("sacct") - a0
}

// launchRunning launches n jobs and marks them running.
func launchRunning(tb testing.TB, e *env, n int) []*Handle {
	var hs []*Handle
	for i := 0; i < n; i++ {
		h, err := e.m.Launch(context.Background(), e.job(e.m, "job-"+strconv.Itoa(i)))
		if err != nil {
			tb.Fatal(err)
		}
		e.slurm.set(h.info.SlurmJobID, "RUNNING", true, "")
		hs = append(hs, h)
	}
	return hs
}

// BenchmarkSchedulerCalls reports scheduler calls per simulated minute for
// n live jobs watched by handles of one process (shared) and by one
// process per job (processes), all running, poll interval 10 s.
func BenchmarkSchedulerCalls(b *testing.B) {
	for _, n := range []int{1, 10, 100, 200} {
		for _, mode := range []string{"shared", "processes"} {
			b.Run(fmt.Sprintf("jobs=%d/%s", n, mode), func(b *testing.B) {
				var calls float64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					e := newEnv(b)
					hs := launchRunning(b, e, n)
					if mode == "processes" {
						for k, h := range hs {
							m := e.manager()
							oh, err := m.Open(h.info.JobID)
							if err != nil {
								b.Fatal(err)
							}
							hs[k] = oh
						}
					}
					b.StartTimer()
					q, a := simulateMinute(b, e, hs, rand.New(rand.NewPCG(uint64(i), 7)))
					calls += float64(q + a)
				}
				b.ReportMetric(calls/float64(b.N), "calls/min")
			})
		}
	}
}

// TestSchedulerCallsBound holds the bound in the unit tier: 200 live
// jobs, 200 watching processes, poll interval 10 s → at most 12 calls per
// minute (all jobs running, so no sacct is due).
func TestSchedulerCallsBound(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 50
	}
	e := newEnv(t)
	hs := launchRunning(t, e, n)
	for k, h := range hs {
		oh, err := e.manager().Open(h.info.JobID)
		if err != nil {
			t.Fatal(err)
		}
		hs[k] = oh
	}
	q, a := simulateMinute(t, e, hs, rand.New(rand.NewPCG(1, 2)))
	if q+a > 12 || q < 5 {
		t.Fatalf("%d processes made %d squeue + %d sacct calls in a minute, want 5..12 in total", n, q, a)
	}
	// Half the jobs leave the queue and finish: one sacct per refresh at most.
	for i := 0; i < n/2; i++ {
		e.slurm.set(hs[i].info.SlurmJobID, "COMPLETED", false, "0:0")
	}
	q, a = simulateMinute(t, e, hs, rand.New(rand.NewPCG(3, 4)))
	if q > 7 || a > 7 {
		t.Fatalf("after jobs ended: %d squeue, %d sacct in a minute, want at most 7 each", q, a)
	}
	for i := 0; i < n/2; i++ {
		if st, _ := hs[i].Poll(context.Background()); !st.Terminal || st.ReturnCode != 0 {
			t.Fatalf("job %d: %+v", i, st)
		}
	}
}

// BenchmarkHandlesRSS reports the process RSS with 1,000 live handles,
// each with a goroutine blocked in WaitReporting (target ≤ 64 MiB).
func BenchmarkHandlesRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		e := newEnv(b)
		e.m.cfg.Sleep = sleepCtx // real sleeps: the waits block
		e.m.cfg.PollInterval = time.Hour
		hs := launchRunning(b, e, 1000)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, len(hs))
		for _, h := range hs {
			go func() { h.WaitReporting(ctx, nil); done <- struct{}{} }()
		}
		time.Sleep(200 * time.Millisecond)
		runtime.GC()
		b.ReportMetric(rssMiB(b), "RSS-MiB")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		cancel()
		for range hs {
			<-done
		}
	}
}

func rssMiB(tb testing.TB) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
