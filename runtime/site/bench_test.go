package site

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeScheduler is a counting stand-in for the four commands, keeping every
// job on one line of jobs.txt: id|state|uid|comment|name|exit|submit.
const fakeScheduler = `#!/bin/bash
S=$(dirname "$0"); cmd=$(basename "$0")
echo "$cmd" >> "$S/calls"
ids=""; for a in "$@"; do case $a in --jobs=*) ids=${a#--jobs=};; esac; done
case $cmd in
sbatch)
  [ "$1" = --version ] && { echo "slurm 24.11.5"; exit 0; }
  exec 9>>"$S/lock"; flock 9
  id=$(( $(wc -l < "$S/jobs.txt") + 1000 ))
  name=""; comment=""
  for a in "$@"; do case $a in --job-name=*) name=${a#--job-name=};; --comment=*) comment=${a#--comment=};; esac; done
  echo "$id|RUNNING|$(id -u)|$comment|$name|0:0|$(date +%Y-%m-%dT%H:%M:%S)" >> "$S/jobs.txt"
  echo $id ;;
squeue)
  awk -F'|' -v ids=",$ids," 'index(ids, ","$1",") && $2=="RUNNING" {print $1"|"$2"|"$3"|"$4"|"$5}' "$S/jobs.txt" ;;
sacct)
  case " $* " in *" --starttime=now "*) exit 0;; esac
  awk -F'|' -v ids=",$ids," -v u="$(id -un)" 'index(ids, ","$1",") {print $1"|"$5"|"u"|"$2"|"$6"|0:0|"$7}' "$S/jobs.txt" ;;
esac
`

// BenchmarkWaitProcesses measures scheduler calls with n live jobs each
// watched by its own `flare-slurm wait` process (real processes; poll
// interval 1 s and a 10 s window, or FLARE_BENCH_POLL seconds and
// FLARE_BENCH_WINDOW, e.g. 10 and 60s, for the full-scale figure). It
// reports calls per poll interval and the equivalent calls per minute at
// the default 10 s interval (the bound is 12).
func BenchmarkWaitProcesses(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "flare-slurm")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/flare-slurm/flare-slurm/cmd/flare-slurm").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for _, n := range []int{1, 10, 100, 200} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				perInterval := waitProcesses(b, bin, n)
				b.ReportMetric(perInterval, "calls/interval")
				b.ReportMetric(perInterval*6, "calls/min@10s")
			}
		})
	}
}

func waitProcesses(b *testing.B, bin string, n int) float64 {
	b.Helper()
	b.StopTimer()
	poll, window := 1.0, 10*time.Second
	if v, err := strconv.ParseFloat(os.Getenv("FLARE_BENCH_POLL"), 64); err == nil && v > 0 {
		poll = v
	}
	if v, err := time.ParseDuration(os.Getenv("FLARE_BENCH_WINDOW")); err == nil && v > 0 {
		window = v
	}
	ws := workspaceWith(b, poll, fakeScheduler)
	tools := filepath.Join(filepath.Dir(ws), "bin")
	os.WriteFile(filepath.Join(tools, "jobs.txt"), nil, 0o600)
	rt, err := Open(context.Background(), ws, Options{Environ: os.Environ()})
	if err != nil {
		b.Fatal(err)
	}
	for k := 0; k < n; k++ {
		id := fmt.Sprintf("job-%03d", k)
		os.Mkdir(filepath.Join(ws, id), 0o700)
		if _, err := rt.Launch(context.Background(), "req.json", requestFor(ws, id)); err != nil {
			b.Fatal(err)
		}
	}
	os.Remove(filepath.Join(tools, "calls"))
	start := time.Now()
	var procs []*exec.Cmd
	for k := 0; k < n; k++ {
		cmd := exec.Command(bin, "wait", "--workspace", ws, "--job-id", fmt.Sprintf("job-%03d", k))
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	b.StartTimer()
	time.Sleep(window)
	b.StopTimer()
	calls, _ := os.ReadFile(filepath.Join(tools, "calls"))
	elapsed := time.Since(start)
	squeue, sacct := strings.Count(string(calls), "squeue\n"), strings.Count(string(calls), "sacct\n")
	// End every job and let the waits finish.
	jobs, _ := os.ReadFile(filepath.Join(tools, "jobs.txt"))
	os.WriteFile(filepath.Join(tools, "jobs.txt"), []byte(strings.ReplaceAll(string(jobs), "|RUNNING|", "|COMPLETED|")), 0o600)
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			b.Fatalf("wait process: %v", err)
		}
	}
	b.StartTimer()
	b.Logf("%d processes, %v: %d squeue, %d sacct", n, elapsed.Round(time.Millisecond), squeue, sacct)
	return float64(squeue+sacct) * poll / elapsed.Seconds()
}
