package prepare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/errcode"
)

// A hint must not point at "above": with --json the problems are in the
// envelope's problems array.
func TestProblemHintsDoNotSayAbove(t *testing.T) {
	f := newFixture(t, "site-1", "runtime: slurm\njob_launcher:\n  bogus: 1\n")
	_, err := Run(context.Background(), f.opts(filepath.Join(f.dir, "ws")))
	pe := wantCode(t, err, errcode.InvalidInput)
	if len(pe.Problems) == 0 || strings.Contains(pe.Hint, "above") || !strings.Contains(pe.Hint, "nothing was written") {
		t.Errorf("hint %q with %d problems", pe.Hint, len(pe.Problems))
	}
	f = newFixture(t, "site-1", bareConfig)
	if err := syscall.Mkfifo(filepath.Join(f.kit, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), f.opts(filepath.Join(f.dir, "ws")))
	if pe := wantCode(t, err, errcode.InvalidKit); strings.Contains(pe.Hint, "above") {
		t.Errorf("hint %q", pe.Hint)
	}
}

// A missing default KIT/config.yaml is named as such, with a hint at
// --config, instead of "is not a valid Slurm config".
func TestMissingDefaultConfig(t *testing.T) {
	f := newFixture(t, "site-1", bareConfig)
	_, err := Run(context.Background(), Options{Kit: f.kit})
	pe := wantCode(t, err, errcode.InvalidInput)
	want := "the default config " + filepath.Join(f.kit, "config.yaml") + " does not exist"
	if pe.Message != want {
		t.Errorf("message %q, want %q", pe.Message, want)
	}
	if !strings.Contains(pe.Hint, "--config FILE") {
		t.Errorf("hint %q", pe.Hint)
	}
	assertUntouched(t, filepath.Join(f.kit, "prepared"), "absent")
	// Kit problems are still reported with it.
	if err := os.Remove(filepath.Join(f.kit, "startup", "rootCA.pem")); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Options{Kit: f.kit})
	pe = wantCode(t, err, errcode.InvalidInput)
	if !strings.Contains(pe.Problems.Error(), "rootCA.pem") {
		t.Errorf("kit problems not reported: %q", pe.Problems.Error())
	}
}
