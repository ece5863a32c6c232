package compile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WriteJobDir only chmods what the umask narrowed: under a umask that
// strips owner bits every artifact must still get its exact mode, and the
// content must be complete. (No test in this package runs in parallel, so
// changing the process umask here is safe.)
func TestWriteJobDirExactModesUnderNarrowUmask(t *testing.T) {
	for _, mask := range []int{0o077, 0o377, 0o777} {
		f := newFixture(t, "apptainer", "client")
		_, a := f.MustCompile()
		old := syscall.Umask(mask)
		err := WriteJobDir(a, false)
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %o: %v", mask, err)
		}
		modes := map[string]os.FileMode{"": 0o700 | os.ModeDir, "sandbox_root": 0o700 | os.ModeDir, "batch.sh": 0o700, "secret.env": 0o600}
		for rel, want := range modes {
			info, err := os.Lstat(filepath.Join(a.JobDir, rel))
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode() != want {
				t.Errorf("umask %o: %s mode %v, want %v", mask, rel, info.Mode(), want)
			}
		}
		for name, want := range map[string][]byte{"batch.sh": a.BatchScript, "secret.env": a.SecretEnv} {
			if got, err := os.ReadFile(filepath.Join(a.JobDir, name)); err != nil || string(got) != string(want) {
				t.Errorf("umask %o: %s content differs (%v)", mask, name, err)
			}
		}
	}
}
