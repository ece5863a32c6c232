package prepare

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
)

// A failed prepare leaves nothing behind, not even the parent directories
// of the output that it created.
func TestFailedWriteRemovesTheParentsItCreated(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	out := filepath.Join(f.dir, "new", "nested", "ws")
	ws := f.render(t, out)
	// The kit loses a file between rendering and writing.
	if err := os.Remove(filepath.Join(f.kit, "startup", "rootCA.pem")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, write(context.Background(), ws), errcode.PrepareFailed)
	if _, err := os.Lstat(filepath.Join(f.dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the failed prepare left the parent directories it created: %v", err)
	}
	// An interrupted one too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantCode(t, write(ctx, ws), errcode.Interrupted)
	if _, err := os.Lstat(filepath.Join(f.dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the interrupted prepare left the parent directories it created: %v", err)
	}
}
