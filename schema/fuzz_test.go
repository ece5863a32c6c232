package schema

import (
	"os"
	"path/filepath"
	"testing"
)

// seed adds every testdata file matching pattern to the corpus.
func seed(f *testing.F, patterns ...string) {
	f.Helper()
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// checkProblems fails when a loader returns neither a value nor problems,
// both, or a problem without a file.
func checkProblems(t *testing.T, valid bool, probs Problems) {
	t.Helper()
	if valid == (probs != nil) {
		t.Fatalf("valid result %v with problems %v", valid, probs)
	}
	for _, p := range probs {
		if p.File == "" || p.Message == "" {
			t.Fatalf("incomplete problem %#v", p)
		}
	}
}

func FuzzParseSlurmConfig(f *testing.F) {
	seed(f, "testdata/slurm-*.yaml", "../examples/*slurm.yaml")
	f.Add([]byte("runtime: slurm\njob_launcher: {sandbox: none, python_path: /p, multi_node_port_range: \"1024-2048\"}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, probs := parseSlurm("f.yaml", data)
		checkProblems(t, cfg != nil, probs)
		if cfg != nil && (cfg.JobLauncher.InternalPort < 1 || cfg.JobLauncher.InternalPort > 65535 || cfg.JobLauncher.PythonPath == "") {
			t.Fatalf("accepted an invalid config %+v", cfg.JobLauncher)
		}
	})
}

func FuzzParseStudyRuntime(f *testing.F) {
	seed(f, "testdata/study_runtime*.yaml", "../examples/study_runtime.yaml")
	f.Add([]byte("format_version: 2\nstudies: {a: {env: {X: 1}, secret_env: {Y: {source: Z}}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sr, probs := parseStudyRuntime("s.yaml", data)
		checkProblems(t, sr != nil, probs)
		if sr != nil {
			for _, s := range sr.Studies {
				for _, e := range s.Env {
					if !IsValidEnvName(e.Name) || IsLauncherOwnedEnvName(e.Name) {
						t.Fatalf("accepted env name %q", e.Name)
					}
				}
			}
		}
	})
}

func FuzzParseJobMeta(f *testing.F) {
	seed(f, "testdata/meta*.json", "../examples/meta.json")
	f.Add([]byte(`{"resource_spec": {"s": {"num_of_gpus": 4}}, "launcher_spec": {"s": {"slurm": {"nodes": 2, "gpus_per_node": 2}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, site := range []string{"", "s", "site-1"} {
			m, probs := ParseJobMeta("meta.json", data, site)
			checkProblems(t, m != nil, probs)
			if m != nil && m.Slurm.Nodes < 1 {
				t.Fatalf("accepted nodes %d", m.Slurm.Nodes)
			}
		}
	})
}
