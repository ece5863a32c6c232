package compile

import (
	"os"
	"testing"

	"github.com/flare-slurm/flare-slurm/schema"
)

// BenchmarkCompileJob measures one launch's compile: parse the request,
// resolve the plan (study runtime re-read, run dir and mount checks),
// render the artifacts and write the job dir exclusively without fsync.
// Target: at most 1 ms per job.
func BenchmarkCompileJob(b *testing.B) {
	for _, v := range variants {
		if v.name != "none-client" && v.name != "apptainer-study" && v.name != "pyxis-study" {
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			f := newFixture(b, v.sandbox, v.role)
			if v.adjust != nil {
				v.adjust(f)
			}
			data := f.Write()
			ws, err := schema.LoadWorkspace(f.Root)
			if err != nil {
				b.Fatal(err)
			}
			env := f.environ()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req, err := ParseRequest("request.json", data)
				if err != nil {
					b.Fatal(err)
				}
				p, err := resolvePlaced(ws, req, env)
				if err != nil {
					b.Fatal(err)
				}
				a, err := p.Compile(env)
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteJobDir(a, false); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.RemoveAll(a.JobDir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "plans/s")
		})
	}
}

// BenchmarkResolveAndRender is BenchmarkCompileJob without the job dir
// write: the compiler's own cost, independent of the filesystem.
func BenchmarkResolveAndRender(b *testing.B) {
	for _, v := range variants {
		if v.name != "none-client" && v.name != "apptainer-study" {
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			f := newFixture(b, v.sandbox, v.role)
			if v.adjust != nil {
				v.adjust(f)
			}
			data := f.Write()
			ws, err := schema.LoadWorkspace(f.Root)
			if err != nil {
				b.Fatal(err)
			}
			env := f.environ()
			b.ReportAllocs()
			for b.Loop() {
				req, err := ParseRequest("request.json", data)
				if err != nil {
					b.Fatal(err)
				}
				p, err := resolvePlaced(ws, req, env)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Compile(env); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "plans/s")
		})
	}
}

// BenchmarkWriteJobDir is the job dir write alone (no fsync): the part of
// BenchmarkCompileJob that depends on the filesystem and its load.
func BenchmarkWriteJobDir(b *testing.B) {
	for _, sandbox := range []string{"none", "apptainer"} {
		b.Run(sandbox, func(b *testing.B) {
			f := newFixture(b, sandbox, "client")
			_, a := f.MustCompile()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := WriteJobDir(a, false); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.RemoveAll(a.JobDir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
