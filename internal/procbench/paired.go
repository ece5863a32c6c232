package procbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Command is one process to time as a whole: its argv, its environment
// (nil: this process's) and what to do, untimed, before each run.
type Command struct {
	Argv   []string
	Env    []string
	Before func() error
}

// Pair holds the wall times in seconds of two commands run in turn, A B A
// B ..., and the ratio A/B of each pair: a ratio of one pair holds when the
// machine's speed drifts between pairs.
type Pair struct {
	A, B, Ratios []float64
}

// RunPaired runs warmup uncounted pairs, then runs counted pairs.
func RunPaired(ctx context.Context, a, b Command, runs, warmup int) (Pair, error) {
	var p Pair
	for i := 0; i < warmup+runs; i++ {
		ta, err := timeRun(ctx, a)
		if err != nil {
			return p, err
		}
		tb, err := timeRun(ctx, b)
		if err != nil {
			return p, err
		}
		if i >= warmup {
			p.A, p.B = append(p.A, ta.Seconds()), append(p.B, tb.Seconds())
			p.Ratios = append(p.Ratios, ta.Seconds()/tb.Seconds())
		}
	}
	return p, nil
}

// timeRun runs c once and returns its wall time, from start to exit.
func timeRun(ctx context.Context, c Command) (time.Duration, error) {
	if c.Before != nil {
		if err := c.Before(); err != nil {
			return 0, fmt.Errorf("before %s: %w", c.Argv[0], err)
		}
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = c.Env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		tail := out.Bytes() // its last 2000 bytes
		if len(tail) > 2000 {
			tail = append([]byte("..."), tail[len(tail)-2000:]...)
		}
		return 0, fmt.Errorf("%s: %v\n%s", strings.Join(c.Argv, " "), err, tail)
	}
	return elapsed, nil
}

// PeakRSS is the largest peak resident set size of c over runs, in KiB,
// as GNU time reports it. (Go starts children with vfork semantics, so the
// rusage of a child of this process would include this process's memory
// up to the exec; GNU time forks from its own small image.)
func PeakRSS(ctx context.Context, c Command, runs int) (int64, error) {
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		return 0, fmt.Errorf("GNU time is needed for peak RSS (apt-get install time): %v", err)
	}
	f, err := os.CreateTemp("", "procbench-rss-")
	if err != nil {
		return 0, err
	}
	f.Close()
	defer os.Remove(f.Name())
	var peak int64
	for i := 0; i < runs; i++ {
		wrapped := c
		wrapped.Argv = append([]string{timeBin, "-f", "%M", "-o", f.Name()}, c.Argv...)
		if _, err := timeRun(ctx, wrapped); err != nil {
			return 0, err
		}
		data, err := os.ReadFile(f.Name())
		if err != nil {
			return 0, err
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("GNU time printed %q: %v", data, err)
		}
		peak = max(peak, kib)
	}
	return peak, nil
}

// Median is the median of xs (the mean of the middle two for an even
// count).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Load is the machine's load average line (/proc/loadavg), quoted with
// every figure: other work on the machine moves whole-process timings.
func Load() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
