package compile

import (
	"slices"
	"strings"
	"testing"
)

// TestWithProbeWorker: a probe plan differs from the job's only in the
// worker (python_path -u script <the same worker args>) and the probe
// directives after the job's; the job's plan is unchanged, and the
// rendered batch.sh and sbatch argv differ from the job's in exactly that.
func TestWithProbeWorker(t *testing.T) {
	for _, sandbox := range []string{"none", "apptainer", "pyxis"} {
		t.Run(sandbox, func(t *testing.T) {
			f := newFixture(t, sandbox, "client")
			p, a := f.MustCompile()
			before := p.View()
			script := "/ws/run/flare_slurm_probe.py"
			q, err := p.WithProbeWorker(script, Directive{Key: "begin", Value: "now+1hour"})
			if err != nil {
				t.Fatal(err)
			}
			v := q.View()
			want := append([]string{before.WorkerArgv[0], "-u", script}, before.WorkerArgv[4:]...)
			if !slices.Equal(v.WorkerArgv, want) {
				t.Errorf("probe worker argv %q, want %q", v.WorkerArgv, want)
			}
			if got := p.View(); !slices.Equal(got.WorkerArgv, before.WorkerArgv) || len(got.Directives) != len(before.Directives) {
				t.Errorf("the job's plan changed: %q %v", got.WorkerArgv, got.Directives)
			}
			qa, err := q.Compile(f.environ())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(qa.SecretEnv, a.SecretEnv) {
				t.Errorf("the probe's secret.env differs from the job's")
			}
			wantArgv := slices.Clone(a.Argv)
			i := slices.IndexFunc(wantArgv, func(s string) bool { return strings.HasPrefix(s, "--job-name=") })
			wantArgv = slices.Insert(wantArgv, i, "--begin=now+1hour")
			if !slices.Equal(qa.Argv, wantArgv) {
				t.Errorf("probe sbatch argv\n %q\nwant\n %q", qa.Argv, wantArgv)
			}
			mod := " -m " + before.WorkerModule
			if !strings.Contains(string(a.BatchScript), mod) {
				t.Fatalf("the job's batch.sh has no %q", mod)
			}
			if got := strings.Replace(string(a.BatchScript), "-u"+mod, "-u "+script, 1); got != string(qa.BatchScript) {
				t.Errorf("probe batch.sh differs from the job's beyond the worker:\n%s", qa.BatchScript)
			}
		})
	}
}

func TestWithProbeWorkerRefuses(t *testing.T) {
	f := newFixture(t, "none", "client")
	p, _ := f.MustCompile()
	for _, c := range []struct {
		script string
		d      []Directive
		want   string
	}{
		{"relative.py", nil, "not an absolute path"},
		{"/p.py", []Directive{{Key: "partition", Value: "x"}}, `"partition" is not one of begin`},
		{"/p.py", []Directive{{Key: "begin", Value: "now +1"}}, "must be one word"},
		{"/p.py", []Directive{{Key: "begin", Value: ""}}, "must be one word"},
	} {
		if _, err := p.WithProbeWorker(c.script, c.d...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WithProbeWorker(%q, %v) = %v, want %q", c.script, c.d, err, c.want)
		}
	}
}
