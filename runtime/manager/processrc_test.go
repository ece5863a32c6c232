package manager

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A finished job's return code is refined from the worker's
// <run dir>/_process_rc.txt as NVFlare's parent does (get_return_code): the
// file's first line replaces the launcher's code unless the launcher says
// infrastructure failure (104); a missing file keeps the code, a
// malformed or symlinked one keeps it with a warning; the file is left in
// place (issue 15 item 7).
func TestReturnCodeRefinedFromProcessRC(t *testing.T) {
	for _, c := range []struct {
		name        string
		state, exit string
		file        string // content; "" for none; "LINK" for a symlink to a file holding 7
		want        int
		warn        bool
	}{
		{"no file", "COMPLETED", "0:0", "", 0, false},
		{"file overrides success", "COMPLETED", "0:0", "3\n", 3, false},
		{"file overrides failure", "FAILED", "1:0", "0\n", 0, false},
		{"first line only, spaces", "FAILED", "1:0", " 101 \nignored\n", 101, false},
		{"negative", "COMPLETED", "0:0", "-9", 0, true},
		{"above 255", "FAILED", "1:0", "256", 1, true},
		{"no newline", "COMPLETED", "0:0", "2", 2, false},
		{"infrastructure stands", "TIMEOUT", "0:15", "0\n", 104, false},
		{"node fail stands", "NODE_FAIL", "0:0", "0\n", 104, false},
		{"malformed keeps launcher code", "FAILED", "103:0", "ok\n", 103, true},
		{"empty keeps launcher code", "COMPLETED", "0:0", "\n", 0, true},
		{"symlink not followed", "COMPLETED", "0:0", "LINK", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var logs bytes.Buffer
			e.m.log = slog.New(slog.NewTextHandler(&logs, nil))
			run := filepath.Join(e.ws, "j")
			if err := os.Mkdir(run, 0o700); err != nil {
				t.Fatal(err)
			}
			rcFile := filepath.Join(run, processRCFile)
			switch c.file {
			case "":
			case "LINK":
				target := filepath.Join(t.TempDir(), "rc")
				os.WriteFile(target, []byte("7\n"), 0o600)
				if err := os.Symlink(target, rcFile); err != nil {
					t.Fatal(err)
				}
			default:
				os.WriteFile(rcFile, []byte(c.file), 0o600)
			}
			h := e.launch("j")
			e.slurm.set("101", c.state, false, c.exit)
			st, err := h.WaitReporting(e.deadline(), nil)
			if err != nil || !st.Terminal || st.ReturnCode != c.want {
				t.Fatalf("%+v %v, want return code %d", st, err, c.want)
			}
			if got := strings.Contains(logs.String(), "level=WARN"); got != c.warn {
				t.Errorf("warning logged %v, want %v:\n%s", got, c.warn, logs.String())
			}
			if c.file != "" {
				if _, err := os.Lstat(rcFile); err != nil {
					t.Errorf("%s was removed: %v", processRCFile, err)
				}
			}
			if c.file != "" && !c.warn && c.want != 104 && !strings.Contains(st.Detail, processRCFile) {
				t.Errorf("detail %q does not say where the code came from", st.Detail)
			}
		})
	}
}
