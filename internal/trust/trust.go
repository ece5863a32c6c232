// Package trust is the one rule for a program flare-slurm runs that must
// not be replaceable by another account: the Slurm commands, getent, and
// (in the launcher bridge, which mirrors this rule in Python) the
// flare-slurm binary itself. A program another account could replace
// would run as this account, and sbatch and the binary read every job's
// credentials.
package trust

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
)

// Find returns the first executable regular file named name in the
// absolute directories of path (a PATH value), "" when there is none. It
// does not check the file: Resolve does.
func Find(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		c := filepath.Join(dir, name)
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return c
		}
	}
	return ""
}

// Resolve resolves the symlinks of the absolute path p and checks the
// program it names: an executable regular file that check accepts. It
// returns the resolved path, which is what the caller must run: running p
// would resolve its links again. Every symlink met on the way must be
// owned by root or by euid and lie in a directory check accepts (with the
// directories above it), or another account could point it elsewhere
// between this check and the exec (e.g. at a trusted program that is not
// flare-slurm, like tee, which would write the credentials it reads on
// standard input to a file).
func Resolve(p string, euid int) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	real, links, err := resolveLinks(p)
	if err != nil {
		return "", fmt.Errorf("%s cannot be resolved: %v", p, fsx.Pathless(err))
	}
	for _, link := range links {
		if err := checkLink(link, euid); err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() || unix.Access(real, unix.X_OK) != nil || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s (resolved to %s) is not an executable regular file", p, real)
	}
	if err := check(real, st, euid); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return real, nil
}

// maxLinks bounds the symlinks one resolution follows, as the kernel's
// ELOOP limit does.
const maxLinks = 40

// resolveLinks resolves the absolute path p one component at a time, as
// the kernel does, and returns the path it names and every symlink it
// followed (their own paths).
func resolveLinks(p string) (string, []string, error) {
	var links []string
	rest := strings.Split(p, "/")
	resolved := "/"
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, name)
		st, err := os.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if len(links) == maxLinks {
			return "", nil, &fs.PathError{Op: "resolve", Path: p, Err: unix.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		links = append(links, next)
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, links, nil
}

// checkLink refuses a symlink another account could change: the link must
// be owned by root or euid (in a sticky directory its owner may replace
// it) and its directory, with every directory above it, must pass the
// rule.
func checkLink(link string, euid int) error {
	st, err := os.Lstat(link)
	if err != nil {
		return fmt.Errorf("cannot check the symlink %s: %v", link, fsx.Pathless(err))
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != euid {
		return fmt.Errorf("the symlink %s is owned by uid %d, neither root nor this account (uid %d), so that account could point it elsewhere; fix: record the program's own path, or a link owned by root or this account", link, sys.Uid, euid)
	}
	return dirsAbove(link, "the symlink "+link, euid)
}

// check refuses a program (real: its path, symlinks resolved; st: its
// stat) that another account could replace: the file and every directory
// above it must be owned by root or by the account that runs it (euid),
// and none may be writable by another account: not by every account, and
// not by a group other than root's (gid 0). A sticky directory (like /tmp)
// may be writable by others, since they cannot rename or remove what they
// do not own in it.
func check(real string, st os.FileInfo, euid int) error {
	if err := entry(real, real, st, euid, false); err != nil {
		return err
	}
	return dirsAbove(real, real, euid)
}

// dirsAbove checks, with entry, every directory above program (what names
// it in the error of one that cannot be checked), up to the root.
func dirsAbove(program, what string, euid int) error {
	for dir := filepath.Dir(program); ; dir = filepath.Dir(dir) {
		dst, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("cannot check %s, a directory above %s: %v", dir, what, fsx.Pathless(err))
		}
		if err := entry(program, dir, dst, euid, true); err != nil {
			return err
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

// entry checks one entry (the program or a directory above it).
func entry(program, path string, st os.FileInfo, euid int, isDir bool) error {
	what := path + " is"
	if path != program {
		what = program + " is in " + path + ", which is"
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if sys.Uid != 0 && int(sys.Uid) != euid {
		return fmt.Errorf("%s owned by uid %d, neither root nor this account (uid %d), so that account could replace the program; fix: use a program owned by root or by this account", what, sys.Uid, euid)
	}
	m := st.Mode()
	if isDir && m&os.ModeSticky != 0 {
		return nil
	}
	if who := aclWriter(path, euid); who != "" {
		return fmt.Errorf("%s writable by %s through a POSIX ACL, so that account could replace the program; fix: setfacl -x on %s", what, who, path)
	}
	switch {
	case m.Perm()&0o002 != 0:
		return fmt.Errorf("%s writable by every account (mode %04o), so any of them could replace the program; fix: chmod o-w %s", what, m.Perm(), path)
	case m.Perm()&0o020 != 0 && sys.Gid != 0:
		return fmt.Errorf("%s writable by group %d (mode %04o), so its members could replace the program; fix: chmod g-w %s", what, sys.Gid, m.Perm(), path)
	}
	return nil
}

// POSIX access ACLs (system.posix_acl_access, acl(5)): a version 2 header,
// then 8-byte entries of tag, permissions and id, little-endian.
const (
	aclXattr     = "system.posix_acl_access"
	aclVersion   = 2
	aclUser      = 0x02 // ACL_USER: a named user
	aclGroup     = 0x08 // ACL_GROUP: a named group
	aclMask      = 0x10 // ACL_MASK: the most a named entry or the group grants
	aclWritePerm = 0x02
)

// aclWriter names an account other than root and euid (a user entry) or a
// group other than root's (a group entry) that path's access ACL lets
// write, or "". Those entries are what the mode does not show: with an
// ACL, the mode's group bits are the mask. An ACL that cannot be read (no
// ACL, or a filesystem without them) adds nothing; NFSv4 ACLs (Lustre,
// GPFS and NFS servers may have them) are not seen.
func aclWriter(path string, euid int) string {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(path, aclXattr, buf)
	if err != nil || n < 4 || binary.LittleEndian.Uint32(buf[:4]) != aclVersion {
		return ""
	}
	entries := buf[4:n]
	mask := uint16(0xffff)
	for i := 0; i+8 <= len(entries); i += 8 {
		if binary.LittleEndian.Uint16(entries[i:]) == aclMask {
			mask = binary.LittleEndian.Uint16(entries[i+2:])
		}
	}
	for i := 0; i+8 <= len(entries); i += 8 {
		tag := binary.LittleEndian.Uint16(entries[i:])
		perm := binary.LittleEndian.Uint16(entries[i+2:]) & mask
		id := binary.LittleEndian.Uint32(entries[i+4:])
		if perm&aclWritePerm == 0 {
			continue
		}
		switch {
		case tag == aclUser && id != 0 && int(id) != euid:
			return fmt.Sprintf("uid %d", id)
		case tag == aclGroup && id != 0:
			return fmt.Sprintf("group %d", id)
		}
	}
	return ""
}

// Output keeps the first Limit bytes a program writes to it and records
// whether more arrived (Over); it never fails, so the child is not killed
// by EPIPE. The Slurm commands' and getent's output is read through it.
type Output struct {
	Buf   []byte
	Limit int
	Over  bool
}

// ReadFrom reads r to its end, keeping the first limit bytes. os/exec
// copies a child's output through it, so a run reads straight into the
// result instead of through a 32 KiB buffer per stream (most of what a
// polling process allocated).
func (w *Output) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	var discard []byte // what arrives past the limit
	for {
		var dst []byte
		room := w.Limit - len(w.Buf)
		if room > 0 {
			if len(w.Buf) == cap(w.Buf) {
				w.Buf = slices.Grow(w.Buf, min(max(512, len(w.Buf)), room))
			}
			dst = w.Buf[len(w.Buf):min(cap(w.Buf), w.Limit)]
		} else {
			if discard == nil {
				discard = make([]byte, 32<<10)
			}
			dst = discard
		}
		n, err := r.Read(dst)
		if n > 0 {
			total += int64(n)
			if room > 0 {
				w.Buf = w.Buf[:len(w.Buf)+n]
			} else {
				w.Over = true
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (w *Output) Write(p []byte) (int, error) {
	_, _ = w.ReadFrom(bytes.NewReader(p)) // a bytes.Reader never fails
	return len(p), nil
}
