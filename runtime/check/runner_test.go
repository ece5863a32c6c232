package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/schema"
)

// TestSecretGone (issue 25 item 3): a probe job's secret.env, with the
// credentials and the study's secrets, is removed when the probe ends if
// the job never started (held, cancelled while pending, kept live by
// --keep, check interrupted), and the row says so; one that cannot be
// removed fails the row, naming the file.
func TestSecretGone(t *testing.T) {
	root := t.TempDir()
	jobID := jobPrefix + "pending-abort-0a1b2c3d"
	dir := schema.JobDir(root, jobID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, schema.SecretEnvFile)
	if err := os.WriteFile(secret, []byte("S1_KEY=s1-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	row := Row{Result: pass, Evidence: "Slurm job 7: seen PENDING"}
	secretGone(root, jobID, &row)
	if _, err := os.Lstat(secret); !os.IsNotExist(err) {
		t.Errorf("secret.env left: %v", err)
	}
	if row.Result != pass || !strings.Contains(row.Evidence, "removed the probe job's secret.env (the job never started)") {
		t.Errorf("row %+v", row)
	}

	// Gone already (the batch script removed it, or the runtime the job
	// dir): nothing to say.
	row = Row{Result: pass, Evidence: "ok"}
	secretGone(root, jobID, &row)
	os.RemoveAll(dir)
	secretGone(root, jobID, &row)
	if row.Evidence != "ok" || row.Result != pass {
		t.Errorf("row %+v", row)
	}

	// Cannot be removed: the row fails and names it.
	if err := os.MkdirAll(secret, 0o700); err != nil { // a directory in its place
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(secret, "x"), nil, 0o600)
	row = Row{Result: pass}
	secretGone(root, jobID, &row)
	if row.Result != fail || !strings.Contains(row.Evidence, secret) || !strings.Contains(row.Evidence, "remove it by hand") {
		t.Errorf("row %+v", row)
	}
}
