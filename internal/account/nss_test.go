package account

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nssOnlyUID is an account that only the test NSS source knows.
const nssOnlyUID = 4243

// TestMain runs the child of TestNSSAccount (nssChild) when the test binary
// was started inside the private mount namespace TestNSSAccount sets up, and
// the tests otherwise. The child is no test of its own: a test that only
// runs inside the namespace would be reported as skipped in every run.
func TestMain(m *testing.M) {
	if os.Getenv("ACCOUNT_NSS_CHILD") == "1" {
		if err := nssChild(); err != nil {
			fmt.Fprintln(os.Stderr, "nss child:", err)
			os.Exit(1)
		}
		fmt.Println(nssChildPassed)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// nssChildPassed is what the child prints when every lookup answered.
const nssChildPassed = "nss child: the NSS-only account resolved"

// TestNSSAccount resolves a real account that exists only in an NSS source
// (libnss-extrausers, standing in for LDAP or SSSD), not in /etc/passwd,
// through the real getent. It runs the test binary in a private mount
// namespace where /etc/nsswitch.conf says "passwd: files extrausers" and
// /var/lib/extrausers/passwd holds the account, so the machine's own files
// are never changed. It needs root, unshare and libnss-extrausers (.ci/run
// installs it).
func TestNSSAccount(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to bind-mount a test nsswitch.conf in a private mount namespace")
	}
	var missing []string
	for _, p := range []string{"/usr/bin/unshare", "/usr/bin/getent", "/var/lib/extrausers"} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if lib, _ := filepath.Glob("/usr/lib*/*/libnss_extrausers.so.2"); len(lib) == 0 {
		if lib, _ := filepath.Glob("/usr/lib/libnss_extrausers.so.2"); len(lib) == 0 {
			missing = append(missing, "libnss_extrausers.so.2 (apt-get install libnss-extrausers)")
		}
	}
	if len(missing) > 0 {
		t.Skipf("missing %s", strings.Join(missing, ", "))
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	if strings.Contains(string(passwd), ":4243:") {
		t.Fatalf("uid %d is in /etc/passwd; the test needs a uid only NSS knows", nssOnlyUID)
	}
	dir := t.TempDir()
	nss := filepath.Join(dir, "nsswitch.conf")
	extra := filepath.Join(dir, "extrausers")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(nss, []byte("passwd: files extrausers\ngroup: files extrausers\n"), 0o644)
	os.WriteFile(filepath.Join(extra, "passwd"), []byte("nss.only@example.org:x:4243:4243:NSS only:/nonexistent:/usr/sbin/nologin\n"), 0o644)
	os.WriteFile(filepath.Join(extra, "group"), []byte("nssonly:x:4243:\n"), 0o644)
	script := "mount --bind \"$1\" /etc/nsswitch.conf && mount --bind \"$2\" /var/lib/extrausers && exec \"$3\""
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", nss, extra, os.Args[0])
	cmd.Env = append(os.Environ(), "ACCOUNT_NSS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), nssChildPassed) {
		t.Fatalf("child in a private mount namespace: %v\n%s", err, out)
	}
}

// nssChild runs inside TestNSSAccount's mount namespace: the account is
// not in /etc/passwd, and both the getent fallback alone and Name resolve it.
func nssChild() error {
	passwd, _ := os.ReadFile("/etc/passwd")
	if strings.Contains(string(passwd), "nss.only") {
		return errors.New("the account is in /etc/passwd: a pure-Go lookup would find it")
	}
	// The fallback alone, through the real getent and NSS.
	name, err := getent(context.Background(), nssOnlyUID, "/usr/bin:/bin", getentTimeout)
	if err != nil || name != "nss.only@example.org" {
		return fmt.Errorf("getent: %q, %v", name, err)
	}
	// And Name, whichever way this test binary's os/user answers.
	name, err = Name(context.Background(), nssOnlyUID, "/usr/bin:/bin")
	if err != nil || name != "nss.only@example.org" {
		return fmt.Errorf("Name: %q, %v", name, err)
	}
	return nil
}
