package site

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flare-slurm/flare-slurm/generator/compile"
	"github.com/flare-slurm/flare-slurm/schema"
)

// A launch from inside a worker (NVFLARE_SLURM_CHILD_PROCESS=1, which every
// batch script exports) is refused before anything is written or
// submitted, as NVFlare's launcher refuses it in a child process (issue
// 15 item 5). Any other value is not the marker.
func TestNestedLaunchRefused(t *testing.T) {
	for _, tc := range []struct {
		value   string
		refused bool
	}{{"1", true}, {"0", false}, {"", false}, {"true", false}} {
		t.Run("value="+tc.value, func(t *testing.T) {
			ws := clientWorkspace(t)
			rec := &recorder{}
			environ := []string{"PATH=/usr/bin", compile.ChildProcessEnv + "=" + tc.value}
			rt, err := Open(context.Background(), ws, Options{Environ: environ, Runner: rec})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = rt.LaunchWithNotes(context.Background(), "req.json", request(ws))
			if !tc.refused {
				if err != nil {
					t.Fatalf("launch with %s=%q: %v", compile.ChildProcessEnv, tc.value, err)
				}
				return
			}
			if !errors.Is(err, errNestedLaunch) {
				t.Fatalf("launch with %s=1: %v, want ErrNestedLaunch", compile.ChildProcessEnv, err)
			}
			if len(rec.calls) != 0 {
				t.Errorf("a refused nested launch ran %d scheduler commands", len(rec.calls))
			}
			if _, err := os.Lstat(filepath.Join(ws, ".nvflare_slurm", "jobs", schema.JobKey("job-1"))); err == nil {
				t.Error("a refused nested launch wrote a job dir")
			}
		})
	}
}
