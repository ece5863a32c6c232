package schema

import (
	"fmt"
	"os"
	"testing"
)

// Benchmarks of the loaders on the testdata examples: `make bench` or
// go test -run '^$' -bench . -benchmem ./schema

func BenchmarkParseSlurmConfig(b *testing.B) {
	data, err := os.ReadFile("testdata/slurm-minimal.yaml")
	if err != nil {
		b.Fatal(err)
	}
	compileAll(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, probs := parseSlurm("slurm.yaml", data); probs != nil {
			b.Fatal(probs)
		}
	}
}

func BenchmarkParseStudyRuntime(b *testing.B) {
	data, err := os.ReadFile("testdata/study_runtime.yaml")
	if err != nil {
		b.Fatal(err)
	}
	compileAll(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, probs := parseStudyRuntime("study_runtime.yaml", data); probs != nil {
			b.Fatal(probs)
		}
	}
}

func BenchmarkParseJobMeta(b *testing.B) {
	data, err := os.ReadFile("testdata/meta.json")
	if err != nil {
		b.Fatal(err)
	}
	compileAll(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, probs := ParseJobMeta("meta.json", data, "site-1"); probs != nil {
			b.Fatal(probs)
		}
	}
}

// BenchmarkInvalidSlurmConfig measures a file with many problems, where the
// reporter walks every error.
func BenchmarkInvalidSlurmConfig(b *testing.B) {
	data := []byte("runtime: k8s\njob_launcher:\n  sandbox: docker\n  python_path: p\n  sbatch_directives: {partiton: x, time: \"1 h\"}\n  forward_env: [SLURM_X, 1A]\n  internal_port: 0\nextra: 1\n")
	compileAll(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, probs := parseSlurm("slurm.yaml", data); len(probs) < 7 {
			b.Fatal(probs)
		}
	}
}

// BenchmarkCompileSchemas is the one-time cost of decoding and compiling
// one embedded schema (paid once per process, only for the schema that the
// process validates against).
func BenchmarkCompileSchemas(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := newEmbedded(name).sch.Get(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadKit loads a client kit holding 500 extra files in 50
// directories: the walk of the kit (one WalkDir) is the part that grows
// with the kit.
func BenchmarkLoadKit(b *testing.B) {
	files := map[string][]byte{}
	for d := range 50 {
		for f := range 10 {
			files[fmt.Sprintf("transfer/d%02d/f%02d.txt", d, f)] = []byte("x\n")
		}
	}
	dir := makeKit(b, "client", "site-1", files)
	b.ReportAllocs()
	for b.Loop() {
		if _, probs := LoadKit(dir, false); probs != nil {
			b.Fatal(probs)
		}
	}
}
