package compile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shared-file listener's directory is bind-mounted at itself, so it
// follows the destination rules of contract §8: never /, /proc, /sys or
// /dev (or below).
func TestSharedFileListenerDirFollowsDestinationRules(t *testing.T) {
	for _, c := range []struct{ root, url string }{
		{"/", "shared-file://0/listener"},
		{"/proc", "shared-file://0/proc/self/listener"},
		{"/dev", "shared-file://0/dev/shm/listener"},
	} {
		f := newFixture(t, "apptainer", "client")
		f.Comm["internal"] = map[string]any{"scheme": "shared-file", "resources": map[string]any{"root_dir": c.root, "connection_security": "clear"}}
		f.args()["parent_url"] = []any{"-p", c.url}
		_, err := f.Resolve()
		if err == nil || !strings.Contains(err.Error(), "job_args.parent_url") || !strings.Contains(err.Error(), "cannot be bind-mounted") {
			t.Errorf("%s: want the listener directory refused, got %v", c.url, err)
		}
	}
}

// startup/ and local/ are bind-mounted from their resolved paths: a
// symlink resolving to a path with ',' would add a mount to pyxis's
// --container-mounts list (and ':' would change an apptainer --bind).
func TestOwnedMountSourcesWithoutSeparators(t *testing.T) {
	for _, sandbox := range []string{"apptainer", "pyxis"} {
		f := newFixture(t, sandbox, "client")
		f.Write()
		target := filepath.Join(f.Dir("elsewhere"), "st,art")
		startup := filepath.Join(f.Root, "startup")
		if err := os.Rename(startup, target); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, startup); err != nil {
			t.Fatal(err)
		}
		_, err := f.Resolve()
		if err == nil || !strings.Contains(err.Error(), "launcher-owned mount") {
			t.Errorf("%s: want the startup mount refused, got %v", sandbox, err)
		}
	}
}
