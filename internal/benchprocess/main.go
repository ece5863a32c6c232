// Command benchprocess measures flare-slurm as whole processes against the
// targets of issue 18 and prints one Markdown table: `make bench-process`.
//
// Each scenario runs two commands in turn, A B A B ..., after a warm-up,
// and quotes the median of the per-pair ratios A/B (a pair's ratio holds
// when the machine's speed drifts), with both medians, the spread of the
// ratios and the load average before and after. Peak RSS is GNU time's.
//
//	go run ./internal/benchprocess [-large=false] [-runs-scale 2]
//
// NVFlare's `deploy prepare` runs from the pinned source (NVFLARE_SRC,
// default ../shared/nvflare) with NVFLARE_PYTHON (default python3) and
// NVFLARE_PYTHONPATH; its scenarios are reported as not run when it cannot
// import.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/flare-slurm/flare-slurm/internal/procbench"
)

func main() {
	large := flag.Bool("large", true, "also run the 10,000-file / 200 MiB kit scenarios")
	scale := flag.Int("runs-scale", 1, "multiply every scenario's number of runs")
	flag.Parse()
	if err := run(*large, max(*scale, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "benchprocess:", err)
		os.Exit(1)
	}
}

func run(large bool, scale int) error {
	ctx := context.Background()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("run it from the repository root (make bench-process)")
	}
	dir, err := os.MkdirTemp("", "benchprocess-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f, err := procbench.NewFixture(ctx, root, dir)
	if err != nil {
		return err
	}
	scenarios, err := f.Scenarios(large)
	if err != nil {
		return err
	}
	fmt.Printf("%s, %d CPUs, %s/%s; load average at start %s\n\n", runtime.Version(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, procbench.Load())
	fmt.Println("| scenario | A | B | median A | median B | A/B median (min–max) | target | met | peak RSS | load |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	failed := 0
	for _, s := range scenarios {
		if s.Missing != "" {
			fmt.Printf("| %s | %s | %s | | | not run | %s | — | | %s |\n", s.Name, s.A, s.B, s.Target, procbench.Load())
			fmt.Fprintf(os.Stderr, "benchprocess: %s not run: %s\n", s.Name, s.Missing)
			continue
		}
		p, err := procbench.RunPaired(ctx, s.CmdA, s.CmdB, s.Runs*scale, s.Warmup)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		med := procbench.Median(p.Ratios)
		met := "yes"
		if !s.Met(med) {
			met, failed = "**no**", failed+1
		}
		rss := ""
		if s.RSS != nil {
			kib, err := procbench.PeakRSS(ctx, *s.RSS, 5)
			if err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			rss = fmt.Sprintf("%.1f MiB", float64(kib)/1024)
			if kib > s.MaxRSSKiB {
				rss += fmt.Sprintf(" (**over %.0f MiB**)", float64(s.MaxRSSKiB)/1024)
				failed++
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %.2f (%.2f–%.2f) | %s | %s | %s | %s |\n",
			s.Name, s.A, s.B, ms(procbench.Median(p.A)), ms(procbench.Median(p.B)),
			med, slices.Min(p.Ratios), slices.Max(p.Ratios), s.Target, met, rss, procbench.Load())
	}
	fmt.Printf("\nload average at the end %s; %d target(s) not met\n", procbench.Load(), failed)
	return nil
}

func ms(seconds float64) string {
	if seconds >= 1 {
		return fmt.Sprintf("%.2f s", seconds)
	}
	return fmt.Sprintf("%.1f ms", seconds*1000)
}
