package staging

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
)

// BenchmarkInstallDurability times Install alone (the swap and what makes
// it durable; the fill and the syncfs before it are not timed), over an
// existing workspace on the test's filesystem:
//
//   - parent: what Install does, one fsync of the output's parent after
//     the RENAME_EXCHANGE;
//   - parent+staging: the earlier behaviour, which fsynced the staging
//     directory too (its entries only hold the old tree, which is garbage).
func BenchmarkInstallDurability(b *testing.B) {
	for _, bc := range []struct {
		name string
		sync func(parent, staging *dirfd.Dir) error
	}{
		{"parent", func(parent, _ *dirfd.Dir) error { return parent.Sync() }},
		{"parent+staging", func(parent, staging *dirfd.Dir) error {
			if err := staging.Sync(); err != nil {
				return err
			}
			return parent.Sync()
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := tempDir(b)
			out := filepath.Join(d, "ws")
			mustStage(b, out, "first")
			for b.Loop() {
				b.StopTimer()
				target, err := Open(out, nil)
				if err != nil {
					b.Fatal(err)
				}
				var s *Staging
				opts := Options{syncDirs: func(...*dirfd.Dir) error { return bc.sync(s.parent, s.dir) }}
				if s, err = target.Stage(opts); err != nil {
					b.Fatal(err)
				}
				if err := s.Fill(context.Background(), bigTree(out, "x", 40)); err != nil {
					b.Fatal(err)
				}
				if err := s.Sync(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.Install(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				target.Close()
				b.StartTimer()
			}
		})
	}
}
