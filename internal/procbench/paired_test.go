package procbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/testenv"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// RunPaired alternates the two commands, runs Before ahead of each run,
// counts only the runs after the warm-up, and reports a failing command
// with its output.
func TestRunPairedAlternates(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	cmd := func(name string) Command {
		return Command{
			Argv: []string{"sh", "-c", "echo " + name + " >> " + log},
			Before: func() error {
				f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = f.WriteString("before-" + name + "\n")
				return err
			},
		}
	}
	p, err := RunPaired(context.Background(), cmd("a"), cmd("b"), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.A) != 3 || len(p.B) != 3 || len(p.Ratios) != 3 {
		t.Fatalf("counted %d/%d runs and %d ratios, want 3", len(p.A), len(p.B), len(p.Ratios))
	}
	for i, r := range p.Ratios {
		if want := p.A[i] / p.B[i]; r != want {
			t.Fatalf("ratio %d = %v, want %v", i, r, want)
		}
	}
	got, _ := os.ReadFile(log)
	want := strings.Repeat("before-a\na\nbefore-b\nb\n", 4)
	if string(got) != want {
		t.Fatalf("order:\n%s\nwant:\n%s", got, want)
	}
	_, err = RunPaired(context.Background(), Command{Argv: []string{"sh", "-c", "echo broken >&2; exit 3"}}, cmd("b"), 1, 0)
	if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("failing command: %v", err)
	}
}

func TestPeakRSS(t *testing.T) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		testenv.Unavailable(t, "GNU time is not installed (Debian: apt-get install time)")
	}
	kib, err := PeakRSS(context.Background(), Command{Argv: []string{"sh", "-c", "true"}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if kib <= 0 || kib > 64<<10 {
		t.Fatalf("peak RSS of sh -c true: %d KiB", kib)
	}
}
