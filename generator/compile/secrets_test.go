package compile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/slurmenv"
	"github.com/flare-slurm/flare-slurm/schema"
)

// TestSecretsNeverLeak scans every artifact but secret.env, the sbatch argv,
// plan.json and the scheduler environment for every secret value: study
// secret_env values, the auth token, its signature and the ssid.
func TestSecretsNeverLeak(t *testing.T) {
	secrets := map[string]string{
		"PATHOLOGY_DB_PASSWORD": "db-pw-Q7w9!x",
		"auth_token":            "tok-ZZ81-unique",
		"auth_signature":        "sig-YY72-unique",
		"ssid":                  "ssid-XX63-unique",
	}
	for _, sandbox := range []string{"none", "apptainer", "pyxis"} {
		for _, role := range []string{"client", "server"} {
			t.Run(sandbox+"-"+role, func(t *testing.T) {
				f := newFixture(t, sandbox, role)
				if sandbox == "none" {
					f.Study = "format_version: 2\nstudies:\n  pathology:\n    secret_env:\n      DB_PASSWORD:\n        source: PATHOLOGY_DB_PASSWORD\n"
				} else {
					f.useStudy(fullStudy)
				}
				f.setMeta(map[string]any{"study": "pathology"})
				f.Env["PATHOLOGY_DB_PASSWORD"] = secrets["PATHOLOGY_DB_PASSWORD"]
				// The process environment holds the secret source and a
				// credential name too: Artifacts.SchedulerEnv starts from it.
				t.Setenv("PATHOLOGY_DB_PASSWORD", secrets["PATHOLOGY_DB_PASSWORD"])
				t.Setenv("NVFLARE_JOB_AUTH_TOKEN", secrets["auth_token"])
				for _, arg := range []string{"auth_token", "auth_signature", "ssid"} {
					pair := f.args()[arg].([]any)
					f.args()[arg] = []any{pair[0], secrets[arg]}
				}
				p, a := f.MustCompile()
				plan, err := marshalJSON(p.view)
				if err != nil {
					t.Fatal(err)
				}
				argv, _ := json.Marshal(a.Argv)
				base := []string{"HOME=/home/fl", "PATHOLOGY_DB_PASSWORD=" + secrets["PATHOLOGY_DB_PASSWORD"],
					"NVFLARE_JOB_AUTH_TOKEN=" + secrets["auth_token"], "SBATCH_PARTITION=x", "SLURM_EXPORT_ENV=ALL", "LC_ALL=en_US.UTF-8"}
				schedEnv := strings.Join(p.SchedulerEnv(base), "\n")
				view, _ := json.Marshal(p.View())
				places := map[string][]byte{
					"batch.sh": a.BatchScript, "sbatch argv": argv, "plan.json": plan, "plan view": view,
					"scheduler env": []byte(schedEnv), "artifacts scheduler env": []byte(strings.Join(a.SchedulerEnv, "\n")),
				}
				for where, data := range places {
					for name, secret := range secrets {
						if bytes.Contains(data, []byte(secret)) {
							t.Errorf("%s holds the secret value of %s", where, name)
						}
					}
				}
				// The secrets do reach secret.env, and only there.
				for name, secret := range secrets {
					if !bytes.Contains(a.SecretEnv, []byte(secret)) {
						t.Errorf("secret.env lacks %s", name)
					}
				}
				if !strings.Contains(schedEnv, "LC_ALL=C") || strings.Contains(schedEnv, "SBATCH_") || strings.Contains(schedEnv, "SLURM_EXPORT_ENV") {
					t.Errorf("scheduler env not scrubbed: %s", schedEnv)
				}
				// A redacted compile carries no secret value at all.
				red, err := p.CompileRedacted(f.environ())
				if err != nil {
					t.Fatal(err)
				}
				for name, secret := range secrets {
					if bytes.Contains(red.SecretEnv, []byte(secret)) {
						t.Errorf("redacted secret.env holds %s", name)
					}
				}
			})
		}
	}
}

func TestScrubSchedulerEnv(t *testing.T) {
	base := []string{"PATH=/usr/bin", "SBATCH_ACCOUNT=a", "SQUEUE_FORMAT=x", "SACCT_FORMAT=y", "SCANCEL_VERBOSE=1",
		"SLURM_CLUSTERS=c", "SLURM_EXPORT_ENV=ALL", "SLURM_HINT=h", "SLURM_MEM_PER_CPU=1", "SLURM_MEM_PER_GPU=2",
		"SLURM_MEM_PER_NODE=3", "SLURM_JOB_ID=9", "LC_ALL=de_DE", "HOME=/h"}
	got := slurmenv.Scrub(base)
	// a parent inside an allocation: its SLURM_JOB_ID would be propagated into the job (issue 28 item 12)
	want := []string{"PATH=/usr/bin", "HOME=/h", "LC_ALL=C"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ScrubSchedulerEnv = %q, want %q", got, want)
	}
}

func TestWriteJobDir(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "apptainer", "client")
	_, a := f.MustCompile()
	if err := WriteJobDir(a, true); err != nil {
		t.Fatal(err)
	}
	modes := map[string]os.FileMode{"": 0o700 | os.ModeDir, "sandbox_root": 0o700 | os.ModeDir, "batch.sh": 0o700, "secret.env": 0o600}
	for rel, want := range modes {
		info, err := os.Lstat(filepath.Join(a.JobDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s mode %v, want %v", rel, info.Mode(), want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(a.JobDir, "batch.sh")); !bytes.Equal(got, a.BatchScript) {
		t.Error("batch.sh content differs from the artifact")
	}
	if filepath.Base(a.JobDir) != schema.JobKey(f.JobID) || len(schema.JobKey(f.JobID)) != 64 {
		t.Errorf("job dir %s is not named by the sha256 of the job id", a.JobDir)
	}
	// A second write of the same job refuses: stale artifacts.
	err := WriteJobDir(a, false)
	if err == nil || !strings.Contains(err.Error(), "stale artifacts") || !strings.Contains(err.Error(), "verify no allocation uses them before removal") {
		t.Fatalf("second write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(a.JobDir, "batch.sh")); err != nil {
		t.Error("the refused write removed the existing artifacts")
	}
}

func TestWriteJobDirCleansUpOnFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "apptainer", "client")
	_, a := f.MustCompile()
	// A symlink where .nvflare_slurm should be is refused and nothing is made.
	if err := os.Symlink(f.Base, filepath.Join(f.Root, ".nvflare_slurm")); err != nil {
		t.Fatal(err)
	}
	if err := WriteJobDir(a, false); err == nil {
		t.Fatal("write through a symlinked control dir succeeded")
	}
	if _, err := os.Lstat(filepath.Join(f.Base, "jobs")); err == nil {
		t.Error("write followed the symlink")
	}
	os.Remove(filepath.Join(f.Root, ".nvflare_slurm"))

	// A failure on the last file removes every file and directory the call
	// created, the control directories included.
	failing := jobDirWriter{syncDir: fsx.SyncDir, createFile: func(dirfd int, name string, data []byte, perm uint32, sync bool) error {
		if name == "batch.sh" {
			return errors.New("injected failure")
		}
		return createExclusive(dirfd, name, data, perm, sync)
	}}
	err := failing.write(a)
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("write: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.Root, ".nvflare_slurm")); err == nil {
		t.Error("a failed write left .nvflare_slurm behind")
	}
	// With the control dirs already there, only the job dir goes.
	if err := os.MkdirAll(filepath.Dir(a.JobDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := failing.write(a); err == nil {
		t.Fatal("write succeeded")
	}
	if _, err := os.Lstat(a.JobDir); err == nil {
		t.Error("a failed write left the job dir behind")
	}
	if _, err := os.Lstat(filepath.Dir(a.JobDir)); err != nil {
		t.Error("a failed write removed the jobs dir it did not create")
	}
}

// TestWriteJobDirSyncsWhatItMade states which directories above the job dir
// a synced write fsyncs: jobs/ always (the new job dir's entry), and
// .nvflare_slurm/ only when the write made jobs/ (an unchanged directory's
// fsync is a device flush for nothing, at every launch).
func TestWriteJobDirSyncsWhatItMade(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "none", "client")
	_, a := f.MustCompile()
	var synced []string
	w := jobDirWriter{sync: true, createFile: createExclusive, syncDir: func(path string) error {
		synced = append(synced, path)
		return fsx.SyncDir(path)
	}}
	jobsDir := filepath.Dir(a.JobDir)
	controlDir := filepath.Dir(jobsDir)
	if err := w.write(a); err != nil {
		t.Fatal(err)
	}
	if want := []string{jobsDir, controlDir}; !slices.Equal(synced, want) {
		t.Errorf("first write (jobs/ made) fsynced %q, want %q", synced, want)
	}
	if err := os.RemoveAll(a.JobDir); err != nil {
		t.Fatal(err)
	}
	synced = nil
	if err := w.write(a); err != nil {
		t.Fatal(err)
	}
	if want := []string{jobsDir}; !slices.Equal(synced, want) {
		t.Errorf("write into an existing jobs/ fsynced %q, want %q", synced, want)
	}
	synced = nil
	if err := os.RemoveAll(a.JobDir); err != nil {
		t.Fatal(err)
	}
	if err := (jobDirWriter{createFile: createExclusive, syncDir: w.syncDir}).write(a); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Errorf("a write without sync fsynced %q", synced)
	}
}
