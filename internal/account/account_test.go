package account

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standIn puts a getent script on a fresh PATH directory; the script
// records its argv (one argument per line) in argv.txt beside it.
func standIn(t *testing.T, body string) (path, argvFile string) {
	t.Helper()
	dir := t.TempDir()
	argvFile = filepath.Join(dir, "argv.txt")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '" + argvFile + "'\n" + body
	if err := os.WriteFile(filepath.Join(dir, "getent"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, argvFile
}

func unknown(id string) (*user.User, error) { return nil, user.UnknownUserIdError(4242) }

func TestNameFromOSUserFirst(t *testing.T) {
	path, argv := standIn(t, "echo 'other:x:4242:1::/:/bin/sh'\n")
	found := func(id string) (*user.User, error) { return &user.User{Uid: id, Username: "local"}, nil }
	name, err := lookup(context.Background(), 4242, path, found, time.Second)
	if err != nil || name != "local" {
		t.Fatalf("got %q, %v", name, err)
	}
	if _, err := os.Stat(argv); err == nil {
		t.Fatal("getent ran although os/user knew the account")
	}
}

// A uid that os/user cannot resolve (a static build, an LDAP account) is
// resolved by `getent passwd UID`, run as an argv.
func TestFallbackToGetent(t *testing.T) {
	path, argv := standIn(t, "echo 'ldap.user@example.org:*:4242:100:LDAP user:/home/ldap.user:/bin/bash'\n")
	name, err := lookup(context.Background(), 4242, "/nonexistent:relative:"+path, unknown, 5*time.Second)
	if err != nil || name != "ldap.user@example.org" {
		t.Fatalf("got %q, %v", name, err)
	}
	got, _ := os.ReadFile(argv)
	if string(got) != "passwd\n4242\n" {
		t.Fatalf("getent argv %q", got)
	}
}

// getent's answer is read strictly: anything but one 7-field line for the
// uid asked, with a plausible name, is an error that names the problem.
func TestGetentAnswerReadStrictly(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"not found", "exit 2\n", "knows no account with uid 4242"},
		{"failure", "echo boom >&2; exit 1\n", "exit status 1"},
		{"empty", "exit 0\n", "not one passwd line"},
		{"no newline", "printf 'u:x:4242:1::/:/bin/sh'\n", "not one passwd line"},
		{"two lines", "echo 'u:x:4242:1::/:/bin/sh'; echo 'v:x:4242:1::/:/bin/sh'\n", "not one passwd line"},
		{"six fields", "echo 'u:x:4242:1:/:/bin/sh'\n", "6 fields"},
		{"other uid", "echo 'root:x:0:0::/root:/bin/sh'\n", `uid "0", not 4242`},
		{"uid with sign", "echo 'u:x:+4242:1::/:/bin/sh'\n", `uid "+4242"`},
		{"space in name", "echo 'a b:x:4242:1::/:/bin/sh'\n", "holds ' '"},
		{"option-like name", "echo '-x:x:4242:1::/:/bin/sh'\n", "starts with '-'"},
		{"empty name", "echo ':x:4242:1::/:/bin/sh'\n", "empty"},
		{"too much output", "head -c 10000 /dev/zero | tr '\\\\0' a; echo\n", "more than 4096 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, _ := standIn(t, c.body)
			name, err := lookup(context.Background(), 4242, path, unknown, 5*time.Second)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q, %v; want an error with %q", name, err, c.want)
			}
			if !strings.Contains(err.Error(), "uid 4242") {
				t.Errorf("error %q does not name the uid", err)
			}
		})
	}
}

// A getent that does not answer (an NSS source that hangs) is given up
// after the time limit, even when a child of it keeps its output open.
func TestGetentTimeLimit(t *testing.T) {
	path, _ := standIn(t, "sleep 30 & sleep 30\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := lookup(ctx, 4242, path, unknown, 200*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer within 200ms") {
			t.Fatalf("got %v", err)
		}
	case <-ctx.Done():
		t.Fatal("lookup did not return within 20 s of a 200 ms limit")
	}
}

func TestNoGetentOnPath(t *testing.T) {
	_, err := lookup(context.Background(), 4242, t.TempDir(), unknown, time.Second)
	if err == nil || !strings.Contains(err.Error(), "getent was not found on PATH") || !strings.Contains(err.Error(), "unknown userid 4242") {
		t.Fatalf("got %v", err)
	}
}

// TestGetentOnAHostilePathRefused (issue 25 item 10): getent, found on the
// parent's PATH, was run without the trust check the Slurm commands get:
// a PATH directory any account can write let that account answer for the
// runtime account (or run its code as it). Such a getent is refused and
// never run, like an untrusted sbatch.
func TestGetentOnAHostilePathRefused(t *testing.T) {
	path, argv := standIn(t, "echo 'mallory:x:4242:1::/:/bin/sh'\n")
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := lookup(context.Background(), 4242, path, unknown, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "getent on PATH is not used") || !strings.Contains(err.Error(), "writable by every account (mode 0777)") {
		t.Errorf("getent in a world-writable PATH directory: %v", err)
	}
	if _, serr := os.Stat(argv); serr == nil {
		t.Error("the untrusted getent ran")
	}
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(path, "getent"), 0o757); err != nil {
		t.Fatal(err)
	}
	if _, err := lookup(context.Background(), 4242, path, unknown, 5*time.Second); err == nil || !strings.Contains(err.Error(), "writable by every account (mode 0757)") {
		t.Errorf("a world-writable getent: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(filepath.Join(path, "getent"), 0o755)
		if err := os.Chown(filepath.Join(path, "getent"), 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := lookup(context.Background(), 4242, path, unknown, 5*time.Second); err == nil || !strings.Contains(err.Error(), "owned by uid 4242") {
			t.Errorf("a getent of another account: %v", err)
		}
	}
}
