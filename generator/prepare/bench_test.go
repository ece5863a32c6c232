package prepare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRenderExampleKit is the in-process cost of validating the
// inputs and rendering the example client kit (nothing written).
func BenchmarkRenderExampleKit(b *testing.B) {
	f := newFixture(b, "site-1", exampleConfig(b, "slurm.yaml"))
	out := filepath.Join(f.dir, "ws")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Render(f.opts(out)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareExampleKit runs the built flare-slurm binary on the
// example client kit over an existing workspace, the way a user does, and
// reports wall time per prepare (ns/op) and the peak RSS of the prepare
// process. Targets: 20 ms and 15 MiB.
//
// The RSS comes from GNU time (/usr/bin/time -f %M) when it is installed:
// Go starts children with vfork semantics, so the rusage Go reports for a
// child includes the test binary's own memory up to the exec; GNU time
// forks from its own small image. Without it the rusage figure is
// reported as an upper bound (peak-RSS-upper-MiB).
func BenchmarkPrepareExampleKit(b *testing.B) {
	bin := buildCLI(b)
	f := newFixture(b, "site-1", exampleConfig(b, "slurm.yaml"))
	out := filepath.Join(f.dir, "ws")
	var peak int64
	exact := true
	b.ResetTimer()
	for b.Loop() {
		kib, isExact, msg, err := measuredRun(b, bin, "prepare", f.kit, "--config", f.config, "--output", out)
		if err != nil {
			b.Fatalf("%v\n%s", err, msg)
		}
		peak, exact = max(peak, kib), exact && isExact
	}
	if exact {
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	} else {
		b.ReportMetric(float64(peak)/1024, "peak-RSS-upper-MiB")
	}
}

// measuredRun runs a command and returns its peak RSS in KiB: exact from
// GNU time (/usr/bin/time -f %M) when it is installed, else Go's rusage of
// the child, an upper bound (exact false): Go starts children with vfork
// semantics, so that figure includes the test binary's own memory up to
// the exec; GNU time forks from its own small image. The timer of a
// benchmark is stopped while GNU time's answer is read.
func measuredRun(tb testing.TB, name string, args ...string) (kib int64, exact bool, out []byte, err error) {
	tb.Helper()
	timeBin, timeErr := exec.LookPath("/usr/bin/time")
	rssFile := filepath.Join(tb.TempDir(), "rss")
	argv := append([]string{name}, args...)
	if timeErr == nil {
		argv = append([]string{timeBin, "-f", "%M", "-o", rssFile}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err = cmd.CombinedOutput()
	if timeErr != nil {
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return ru.Maxrss, false, out, err
	}
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
		defer b.StartTimer()
	}
	data, rerr := os.ReadFile(rssFile)
	text := strings.TrimSpace(string(data))
	// GNU time writes "Command exited with non-zero status N" first then.
	if k := strings.LastIndexByte(text, '\n'); k >= 0 {
		text = text[k+1:]
	}
	if _, scanErr := fmt.Sscan(text, &kib); rerr != nil || scanErr != nil {
		tb.Fatalf("cannot read GNU time's output %q: %v %v", data, rerr, scanErr)
	}
	return kib, true, out, err
}

// largeKit builds a kit of 10,000 files totalling 200 MiB (plus the
// example site-1 files) once per process.
func largeKit(b *testing.B) *fixture {
	f := newFixture(b, "site-1", bareConfig)
	const files, total = 10000, 200 << 20
	chunk := make([]byte, total/files)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for i := range files {
		dir := filepath.Join(f.kit, "transfer", fmt.Sprintf("d%03d", i%100))
		if i < 100 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		chunk[0] = byte(i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.bin", i)), chunk, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// Settle the page cache so both sides start from the same state.
	syscall.Sync()
	return f
}

// BenchmarkPrepareLargeKit compares prepare with `cp -a` of the same kit,
// interleaved in the same run, from a settled page cache each time:
//
//   - fresh: prepare to a new output, the same job as `cp -a` to a new
//     directory, but durable (one syncfs plus the swap's fsyncs);
//   - replace: prepare over the existing workspace, which also removes the
//     old 10,000-file tree;
//   - cp -a, and cp -a followed by `sync -f` (durable too).
//
// It reports the medians and the ratios (target: fresh ≤ 1.5 × cp -a).
func BenchmarkPrepareLargeKit(b *testing.B) {
	f := largeKit(b)
	out := filepath.Join(f.dir, "ws")
	var fresh, replace, cp, cpSync []time.Duration
	prepare := func() time.Duration {
		syscall.Sync()
		start := time.Now()
		if _, err := Run(context.Background(), f.opts(out)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		fresh = append(fresh, prepare())
		replace = append(replace, prepare())
		b.StopTimer()
		dst := filepath.Join(f.dir, "cp-copy")
		syscall.Sync()
		start := time.Now()
		if msg, err := exec.Command("cp", "-a", f.kit, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp -a: %v\n%s", err, msg)
		}
		cp = append(cp, time.Since(start))
		if msg, err := exec.Command("sync", "-f", dst).CombinedOutput(); err != nil {
			b.Fatalf("sync -f: %v\n%s", err, msg)
		}
		cpSync = append(cpSync, time.Since(start))
		if err := os.RemoveAll(dst); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	median := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	pf, pr, c, cs := median(fresh), median(replace), median(cp), median(cpSync)
	b.ReportMetric(float64(pf.Milliseconds()), "fresh-ms")
	b.ReportMetric(float64(pr.Milliseconds()), "replace-ms")
	b.ReportMetric(float64(c.Milliseconds()), "cp-a-ms")
	b.ReportMetric(float64(pf)/float64(c), "fresh/cp-a")
	b.ReportMetric(float64(pr)/float64(c), "replace/cp-a")
	b.ReportMetric(float64(pf)/float64(cs), "fresh/cp-a+sync")
}
