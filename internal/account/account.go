// Package account finds the name of the account a uid belongs to.
//
// os/user answers from the C library (and so from NSS: LDAP, SSSD, ...)
// only in a cgo build. A static build (CGO_ENABLED=0), which release
// artefacts are, reads /etc/passwd alone, where cluster accounts usually
// are not. Name then asks `getent passwd UID`, which goes through NSS.
package account

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/trust"
)

// getentTimeout bounds one run of getent (an NSS source that does not
// answer must not hang the caller).
const getentTimeout = 5 * time.Second

// maxGetentOutput bounds what is read from getent: one passwd line.
const maxGetentOutput = 4 << 10

// Name returns the account name of uid, from os/user or, when that finds
// none, from `getent passwd UID` with getent found on path (a PATH value).
func Name(ctx context.Context, uid int, path string) (string, error) {
	return lookup(ctx, uid, path, user.LookupId, getentTimeout)
}

// lookup is Name with the os/user lookup and the time limit given.
func lookup(ctx context.Context, uid int, path string, lookupID func(string) (*user.User, error), timeout time.Duration) (string, error) {
	id := strconv.Itoa(uid)
	u, err := lookupID(id)
	if err == nil && u.Username != "" {
		return u.Username, nil
	}
	name, gerr := getent(ctx, uid, path, timeout)
	if gerr == nil {
		return name, nil
	}
	return "", fmt.Errorf("uid %d: %v; getent: %v", uid, cmp.Or(err, errors.New("no account name")), gerr)
}

// getent runs `getent passwd UID` and reads its one line strictly. getent
// is found on path like the Slurm commands, and like them refused when
// another account could replace it (internal/trust): it runs as this
// account, and its answer names the account the runtime checks jobs by.
func getent(ctx context.Context, uid int, path string, timeout time.Duration) (string, error) {
	found := trust.Find("getent", path)
	if found == "" {
		return "", errors.New("getent was not found on PATH")
	}
	bin, err := trust.Resolve(found, os.Geteuid())
	if err != nil {
		return "", fmt.Errorf("getent on PATH is not used: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "passwd", strconv.Itoa(uid))
	cmd.Env = []string{}
	cmd.WaitDelay = time.Second
	out := &trust.Output{Limit: maxGetentOutput}
	cmd.Stdout = out
	err = cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("%s did not answer within %v", bin, timeout)
	case out.Over:
		return "", fmt.Errorf("%s printed more than %d bytes", bin, maxGetentOutput)
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2:
		return "", fmt.Errorf("%s knows no account with uid %d", bin, uid)
	case err != nil:
		return "", fmt.Errorf("%s: %v", bin, err)
	}
	return parsePasswdLine(out.Buf, uid)
}

// parsePasswdLine reads getent's answer: exactly one line
// name:password:uid:gid:gecos:home:shell whose uid is the one asked for and
// whose name is a plausible account name.
func parsePasswdLine(out []byte, uid int) (string, error) {
	line, ok := bytes.CutSuffix(out, []byte("\n"))
	if !ok || len(line) == 0 || bytes.ContainsAny(line, "\n\r\x00") {
		return "", fmt.Errorf("getent printed %q, not one passwd line", truncate(out))
	}
	f := strings.Split(string(line), ":")
	if len(f) != 7 {
		return "", fmt.Errorf("getent printed %q: %d fields, a passwd line has 7", truncate(out), len(f))
	}
	if f[2] != strconv.Itoa(uid) {
		return "", fmt.Errorf("getent answered for uid %q, not %d", f[2], uid)
	}
	if err := checkName(f[0]); err != nil {
		return "", fmt.Errorf("getent printed account name %q: %v", f[0], err)
	}
	return f[0], nil
}

// checkName accepts what account names look like, also from LDAP or SSSD
// (user@domain, trailing $ of machine accounts), and nothing that would
// read as an option or hold spaces or control characters.
func checkName(name string) error {
	if name == "" || len(name) > 256 {
		return errors.New("empty or longer than 256 bytes")
	}
	if name[0] == '-' {
		return errors.New("starts with '-'")
	}
	for _, c := range name {
		if c <= ' ' || c == 0x7f || c == '/' || c == ':' || c > 0x7e {
			return fmt.Errorf("holds %q", c)
		}
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
