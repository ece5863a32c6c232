package site

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/procbench"
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
  awk -F'|' -v ids=",$ids," 'index(ids, ","$1",") && $2=="RUNNING" {print $1"|"$2"|"$3"|"$4"|"$5"|None"}' "$S/jobs.txt" ;;
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

// waitFleet is n real `flare-slurm wait` processes, one per running job of
// one workspace whose four Slurm commands are the counting stand-in.
type waitFleet struct {
	tools string
	procs []*exec.Cmd
	start time.Time
}

// startWaits launches n jobs through the runtime and starts one wait
// process for each.
func startWaits(b *testing.B, bin string, n int, poll float64) *waitFleet {
	b.Helper()
	ws := workspaceWith(b, poll, fakeScheduler)
	// A prepared workspace has a study runtime file, which Open reads.
	studies, err := os.ReadFile("../../examples/study_runtime.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "local", "study_runtime.yaml"), studies, 0o600); err != nil {
		b.Fatal(err)
	}
	f := &waitFleet{tools: filepath.Join(filepath.Dir(ws), "bin")}
	os.WriteFile(filepath.Join(f.tools, "jobs.txt"), nil, 0o600)
	rt, err := Open(context.Background(), ws, Options{Environ: os.Environ()})
	if err != nil {
		b.Fatal(err)
	}
	for k := 0; k < n; k++ {
		id := fmt.Sprintf("job-%03d", k)
		os.Mkdir(filepath.Join(ws, id), 0o700)
		if _, _, err := rt.LaunchWithNotes(context.Background(), "req.json", requestFor(ws, id)); err != nil {
			b.Fatal(err)
		}
	}
	os.Remove(filepath.Join(f.tools, "calls"))
	f.start = time.Now()
	for k := 0; k < n; k++ {
		cmd := exec.Command(bin, "wait", "--workspace", ws, "--job-id", fmt.Sprintf("job-%03d", k))
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		f.procs = append(f.procs, cmd)
	}
	return f
}

// calls counts the squeue and sacct calls made so far.
func (f *waitFleet) calls() (squeue, sacct int) {
	calls, _ := os.ReadFile(filepath.Join(f.tools, "calls"))
	return strings.Count(string(calls), "squeue\n"), strings.Count(string(calls), "sacct\n")
}

// finish ends every job and waits for every wait process to exit 0.
func (f *waitFleet) finish(b *testing.B) {
	b.Helper()
	jobs, _ := os.ReadFile(filepath.Join(f.tools, "jobs.txt"))
	os.WriteFile(filepath.Join(f.tools, "jobs.txt"), []byte(strings.ReplaceAll(string(jobs), "|RUNNING|", "|COMPLETED|")), 0o600)
	for _, p := range f.procs {
		if err := p.Wait(); err != nil {
			b.Fatalf("wait process: %v", err)
		}
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
	f := startWaits(b, bin, n, poll)
	b.StartTimer()
	time.Sleep(window)
	b.StopTimer()
	squeue, sacct := f.calls()
	elapsed := time.Since(f.start)
	f.finish(b)
	b.StartTimer()
	b.Logf("%d processes, %v: %d squeue, %d sacct", n, elapsed.Round(time.Millisecond), squeue, sacct)
	return float64(squeue+sacct) * poll / elapsed.Seconds()
}

// BenchmarkWaitPrivateMemory reports the private memory (Private_Clean +
// Private_Dirty of /proc/PID/smaps_rollup) of `flare-slurm wait` processes
// while they poll, after FLARE_BENCH_SETTLE (default 12 s, two memory
// release intervals) of polling every FLARE_BENCH_POLL seconds (default
// 0.5). Four processes run, one per running job, as at a site where every
// job has its own wait: pages of the binary that the four map are shared,
// as they are among a site's hundreds. The binary is built as release
// artefacts are (CGO_ENABLED=0). The target is 2 MiB (2048 KiB).
//
// go-floor is the same measurement of a Go program that only runs the
// stand-in squeue every poll and releases memory as wait does
// (testdata/poller): what the Go runtime alone costs.
func BenchmarkWaitPrivateMemory(b *testing.B) {
	dir := b.TempDir()
	bin, floor := filepath.Join(dir, "flare-slurm"), filepath.Join(dir, "poller")
	for _, build := range [][2]string{{bin, "./cmd/flare-slurm"}, {floor, "./runtime/site/testdata/poller"}} {
		cmd := exec.Command("go", "build", "-o", build[0], build[1])
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", build[1], err, out)
		}
	}
	poll, settle := 0.5, 12*time.Second
	if v, err := strconv.ParseFloat(os.Getenv("FLARE_BENCH_POLL"), 64); err == nil && v > 0 {
		poll = v
	}
	if v, err := time.ParseDuration(os.Getenv("FLARE_BENCH_SETTLE")); err == nil && v > 0 {
		settle = v
	}
	const n = 4
	b.Run("flare-slurm", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			f := startWaits(b, bin, n, poll)
			// Every process has polled: the figure is the polling state.
			deadline := time.Now().Add(30 * time.Second)
			for sq, _ := f.calls(); sq < 3; sq, _ = f.calls() {
				if time.Now().After(deadline) {
					b.Fatalf("the wait processes made %d squeue calls in 30 s", sq)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(settle)
			mem := readAll(b, f.procs)
			f.finish(b)
			b.StartTimer()
			reportMemory(b, mem)
		}
	})
	b.Run("go-floor", func(b *testing.B) {
		squeue := filepath.Join(filepath.Dir(workspaceWith(b, poll, fakeScheduler)), "bin", "squeue")
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			var procs []*exec.Cmd
			for k := 0; k < n; k++ {
				cmd := exec.Command(floor, fmt.Sprint(poll), squeue, "--jobs=1000")
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				procs = append(procs, cmd)
			}
			time.Sleep(settle)
			mem := readAll(b, procs)
			for _, p := range procs {
				p.Process.Kill()
				p.Wait()
			}
			b.StartTimer()
			reportMemory(b, mem)
		}
	})
}

func readAll(b *testing.B, procs []*exec.Cmd) []procbench.Memory {
	b.Helper()
	var mem []procbench.Memory
	for _, p := range procs {
		m, err := procbench.ReadMemory(p.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		mem = append(mem, m)
	}
	return mem
}

// reportMemory reports the largest and the median private memory of the
// processes, and the largest one's dirty, anonymous and resident sizes.
func reportMemory(b *testing.B, mem []procbench.Memory) {
	slices.SortFunc(mem, func(x, y procbench.Memory) int { return int(x.Private() - y.Private()) })
	worst := mem[len(mem)-1]
	b.ReportMetric(float64(worst.Private())/(1<<10), "max-private-KiB")
	b.ReportMetric(float64(mem[len(mem)/2].Private())/(1<<10), "median-private-KiB")
	b.ReportMetric(float64(worst.PrivateDirty)/(1<<10), "private-dirty-KiB")
	b.ReportMetric(float64(worst.Rss)/(1<<10), "rss-KiB")
}

// BenchmarkBridgeLaunch compares the launcher bridge's two ways to launch
// one job (issue 27): a `flare-slurm launch --request - --attach
// --no-bootstrap --json` process per job, and a launch line to the
// parent's one `wait --follow --json` process. The Slurm commands are the
// instantSbatch, whose work is one echo in dash. It reports wall time and
// CPU time per launch: the launch process's rusage (with its sbatch,
// about a millisecond), or the follower's /proc/PID/stat ticks across b.N
// launches (without its sbatch).
func BenchmarkBridgeLaunch(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "flare-slurm")
	build := exec.Command("go", "build", "-o", bin, "github.com/flare-slurm/flare-slurm/cmd/flare-slurm")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as release artefacts are
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	ws := workspaceWith(b, 10, instantSbatch)
	next := 0
	request := func() []byte {
		next++
		id := fmt.Sprintf("job-%06d", next)
		os.Mkdir(filepath.Join(ws, id), 0o700)
		return requestFor(ws, id)
	}
	b.Run("process", func(b *testing.B) {
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			cmd := exec.Command(bin, "launch", "--workspace", ws, "--request", "-", "--attach", "--no-bootstrap", "--json")
			cmd.Stdin = bytes.NewReader(request())
			b.StartTimer()
			out, err := cmd.Output()
			if err != nil || !bytes.Contains(out, []byte(`"status": "ok"`)) {
				b.Fatalf("launch: %v: %s", err, out)
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/launch")
	})
	b.Run("follower", func(b *testing.B) {
		cmd := exec.Command(bin, "wait", "--workspace", ws, "--follow", "--json")
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		out := bufio.NewReader(outPipe)
		if hello, err := out.ReadBytes('\n'); err != nil || !bytes.Contains(hello, []byte(`"command":"hello"`)) {
			b.Fatalf("the follower's first line: %v: %s", err, hello)
		}
		environ, _ := json.Marshal(os.Environ())
		launch := func(tag string) {
			line := fmt.Appendf(nil, "launch %s %s %s\n", tag, environ, bytes.ReplaceAll(request(), []byte("\n"), nil))
			if _, err := in.Write(line); err != nil {
				b.Fatal(err)
			}
			answer, err := out.ReadBytes('\n')
			if err != nil || !bytes.Contains(answer, []byte(`"status":"ok","command":"launch","tag":"`+tag+`"`)) {
				b.Fatalf("launch line: %v: %s", err, answer)
			}
		}
		b.StopTimer()
		// Before any launch, after one memory release interval: what the
		// launches add to a follower that only watches.
		time.Sleep(6 * time.Second)
		idle := readAll(b, []*exec.Cmd{cmd})[0]
		launch("warm") // the schemas compile once, at the first launch
		before := procCPU(b, cmd.Process.Pid)
		b.StartTimer()
		for i := 0; i < b.N; i++ {
			launch(strconv.Itoa(i))
		}
		b.StopTimer()
		cpu := procCPU(b, cmd.Process.Pid) - before
		// The follower's private memory right after the launches, as a
		// parent host sees it during a burst of starts, and after two
		// memory release intervals of the wait (5 s) without launches (it
		// forgets its compiled schemas and templates after a whole one).
		burst := readAll(b, []*exec.Cmd{cmd})[0]
		time.Sleep(11 * time.Second)
		settled := readAll(b, []*exec.Cmd{cmd})[0]
		in.Close()
		cmd.Wait()
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/launch")
		b.ReportMetric(float64(burst.Private())/(1<<10), "private-KiB")
		b.ReportMetric(float64(settled.Private())/(1<<10), "settled-private-KiB")
		b.ReportMetric(float64(burst.Anonymous)/(1<<10), "anon-KiB")
		b.ReportMetric(float64(settled.Anonymous)/(1<<10), "settled-anon-KiB")
		b.ReportMetric(float64(idle.Anonymous)/(1<<10), "unlaunched-anon-KiB")
	})
}

// instantSbatch stands in for the four Slurm commands: sbatch prints a
// job id (its pid) at once, the others print nothing.
const instantSbatch = "#!/bin/sh\ncase \"$0\" in *sbatch) echo $$;; esac\n"

// procCPU is a process's user and system time from /proc/PID/stat (clock
// ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
