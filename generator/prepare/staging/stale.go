package staging

// Staging directories and how a later prepare proves one abandoned.
//
// A prepare stages the new workspace in OUT/../.<base>.prepare-<owner>-<random>
// where <owner> is "h<host>p<pid>s<start>": an 8-hex hash of the host name,
// the process id and the process start time (clock ticks since boot,
// /proc/<pid>/stat field 22). The prepare holds an exclusive flock(2) on
// the staging directory for as long as it runs; the kernel releases it
// when the process ends, however it ends. SIGINT, SIGTERM and SIGHUP are
// handled (the staging directory is removed before exiting), but SIGKILL
// or a crash leaves it. The next prepare of the same output removes every
// such sibling that is provably abandoned: made on this host, owned by
// this account, and its lock is free. Where the filesystem cannot lock a
// directory (NFS, some FUSE filesystems) it falls back to the name: no
// process with that pid and start time exists. Directories of other hosts
// (the output may be on a shared filesystem, where a lock may be local to
// one host) or of other accounts are left alone, with a warning.
//
// The lock is taken right after the directory is made: a prepare of the
// same output that lists the parent in the few microseconds between the
// two would remove it, and the prepare that made it then fails with a
// clear error (nothing is lost).

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/dirfd"
	"github.com/flare-slurm/flare-slurm/internal/shell"
)

// Prefix is the name prefix of the staging directories of output
// (they sit beside it).
func Prefix(output string) string {
	return "." + filepath.Base(output) + ".prepare-"
}

// ownerRE parses the owner part of a staging directory name. It is
// compiled on first use: every flare-slurm command would otherwise pay for
// it at start-up.
var ownerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^h([0-9a-f]{8})p([0-9]+)s([0-9]+)-[0-9a-f]+$`)
})

func hostTag() string {
	name, _ := os.Hostname()
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// startTime returns field 22 of /proc/<pid>/stat, or "" when the process
// does not exist (or /proc is unavailable).
func startTime(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// ownerAlive says whether the prepare that made a staging directory may
// still run, judged by its name only (where locks are unsupported): a
// process with its pid and start time exists ("0" means the start time
// was unknown: any process with the pid counts). Without /proc it falls
// back to kill(pid, 0).
func ownerAlive(pid int, start string) bool {
	if st := startTime(pid); st != "" {
		return start == "0" || st == start
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return false // /proc works and has no such process
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// stagingName is a new staging directory name for output.
func stagingName(output string) string {
	var rnd [6]byte
	rand.Read(rnd[:]) // never fails (it crashes the program instead)
	pid := os.Getpid()
	return fmt.Sprintf("%sh%sp%ds%s-%s", Prefix(output), hostTag(), pid, cmp.Or(startTime(pid), "0"), hex.EncodeToString(rnd[:]))
}

// asideName is the entry of a staging directory that holds the old
// workspace while the two-rename fallback of the swap runs, newName the
// new tree before the swap (and the old one after an exchange), and
// keptMarker the file that marks a staging directory whose old workspace
// could not be put back.
const (
	asideName  = "old"
	newName    = "new"
	keptMarker = "KEPT-OLD-WORKSPACE"
)

// cleanStale removes the abandoned staging directories of earlier
// prepares of output from parent.
func (s *Staging) cleanStale(parent *dirfd.Dir) {
	prefix := Prefix(s.target.Path)
	names, err := parent.Names()
	if err != nil {
		return
	}
	host := hostTag()
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		st, err := parent.Lstat(name)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		path := parent.Join(name)
		if int(st.Uid) != os.Geteuid() {
			s.warnf("leaving %s: it belongs to another user; remove it once no prepare of %s runs", s.target.named(path), s.target.named(s.target.Path))
			continue
		}
		m := ownerRE().FindStringSubmatch(strings.TrimPrefix(name, prefix))
		if m == nil || m[1] != host {
			s.warnf("leaving %s: it was not made by a prepare on this host (another host, or another tool); remove it once no prepare of %s runs", s.target.named(path), s.target.named(s.target.Path))
			continue
		}
		s.removeIfAbandoned(parent, name, st, m[2], m[3])
	}
}

// removeIfAbandoned removes the staging directory name of parent (lstat
// st, owner pid and start time from its name) when its prepare is gone.
func (s *Staging) removeIfAbandoned(parent *dirfd.Dir, name string, st unix.Stat_t, pidText, start string) {
	path := parent.Join(name)
	d, err := parent.OpenDir(name)
	if err != nil {
		return
	}
	defer d.Close() // holds the lock until the directory is gone
	id := dirfd.IDOf(&st)
	if d.ID() != id {
		return
	}
	locked, err := s.opts.tryLock(d)
	switch {
	case errors.Is(err, dirfd.ErrLockUnsupported):
		pid, perr := strconv.Atoi(pidText)
		if perr != nil || ownerAlive(pid, start) {
			return
		}
	case err != nil:
		s.warnf("leaving %s: cannot tell whether its prepare still runs: %v", s.target.named(path), err)
		return
	case !locked:
		return // its prepare runs
	}
	if holdsOldWorkspace(d, parent, s.target.base) {
		s.warnf("leaving %s: it holds the old workspace of %s, which an interrupted or failed swap did not put back; move it back or remove it yourself",
			s.target.named(filepath.Join(path, asideName)), s.target.named(s.target.Path))
		return
	}
	if err := s.opts.remove(parent, name, &id); err != nil {
		s.warnf("could not remove the abandoned staging directory %s: %v", s.target.named(path), err)
	} else {
		s.warnf("removed the abandoned staging directory %s of an interrupted prepare", s.target.named(path))
	}
}

// holdsOldWorkspace says whether the abandoned staging directory d may
// hold the only copy of the output's old workspace, or a directory that
// is not prepare's: it is marked (keptMarker), or the fallback moved the
// old workspace aside (d/old exists) and never completed (the output base
// is absent from parent: killed between the two renames).
func holdsOldWorkspace(d, parent *dirfd.Dir, base string) bool {
	if _, err := d.Lstat(keptMarker); err == nil {
		return true
	}
	if _, err := d.Lstat(asideName); err != nil {
		return false
	}
	_, err := parent.Lstat(base)
	return errors.Is(err, unix.ENOENT)
}

// markKept marks the staging directory as holding the only copy of the
// output's old workspace (at its entry), so that no later prepare removes
// it.
func (s *Staging) markKept(entry string) error {
	old := filepath.Join(s.path, entry)
	note := fmt.Sprintf("%s is the old workspace of %s: a prepare could not put it back.\n"+
		"flare-slurm never deletes this directory. Move it back with:\n  mv %s %s\n",
		old, s.target.Path, shell.Quote(old), shell.Quote(s.target.Path))
	f, err := s.dir.Create(keptMarker, 0o600, processUmask())
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(note))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
