package procbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkProcess runs the whole-process scenarios of issue 18 (the same
// ones `make bench-process` prints as a table): each reports the median of
// the per-pair ratios A/B (ratio-median), both medians in milliseconds and,
// for prepare, flare-slurm's peak RSS. NVFlare's scenarios say why they are
// skipped when its Python code cannot run (see NewFixture).
func BenchmarkProcess(b *testing.B) {
	ctx := context.Background()
	root, _ := filepath.Abs("../..")
	f, err := NewFixture(ctx, root, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	scenarios, err := f.Scenarios(true)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range scenarios {
		b.Run(s.Name, func(b *testing.B) {
			if s.Missing != "" {
				// go test prints a benchmark's skip reason only with -v.
				fmt.Fprintf(os.Stderr, "BenchmarkProcess/%s not run: %s\n", s.Name, s.Missing)
				b.Skip(s.Missing)
			}
			for i := 0; i < b.N; i++ {
				p, err := RunPaired(ctx, s.CmdA, s.CmdB, s.Runs, s.Warmup)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(Median(p.Ratios), "ratio-median")
				b.ReportMetric(Median(p.A)*1000, "A-ms")
				b.ReportMetric(Median(p.B)*1000, "B-ms")
				if s.RSS != nil {
					kib, err := PeakRSS(ctx, *s.RSS, 5)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(kib)/1024, "peak-RSS-MiB")
				}
			}
			b.Logf("%s: A = %s, B = %s, target %s; load %s", s.Name, s.A, s.B, s.Target, Load())
		})
	}
}
