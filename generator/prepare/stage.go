package prepare

// Staging directories and how a later prepare proves one abandoned.
//
// A prepare stages the new workspace in OUT/../.<base>.prepare-<owner>-<random>
// where <owner> is "h<host>p<pid>s<start>": an 8-hex hash of the host name,
// the process id and the process start time (clock ticks since boot,
// /proc/<pid>/stat field 22). SIGINT and SIGTERM are handled (the staging
// directory is removed before exiting), but SIGKILL or a crash leaves it.
// The next prepare of the same output removes every such sibling whose
// owner is provably gone: same host, and no process with that pid and
// start time exists. Directories of other hosts (the output may be on a
// shared filesystem) or of live prepares are left alone, with a warning
// for the former.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/flare-slurm/flare-slurm/internal/fsx"
	"github.com/flare-slurm/flare-slurm/internal/shell"
)

// stagingPrefix is the name prefix of the staging directories of output.
func stagingPrefix(output string) string {
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
// still run: a process with its pid and start time exists ("0" means the
// start time was unknown: any process with the pid counts). Without /proc
// it falls back to kill(pid, 0).
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

func newStagingDir(output string) (string, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	pid := os.Getpid()
	start := startTime(pid)
	if start == "" {
		start = "0"
	}
	name := fmt.Sprintf("%sh%sp%ds%s-%s", stagingPrefix(output), hostTag(), pid, start, hex.EncodeToString(rnd[:]))
	dir := filepath.Join(filepath.Dir(output), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// cleanStale removes the abandoned staging directories of earlier prepares
// of w.Output.
func (w *Workspace) cleanStale() {
	parent := filepath.Dir(w.Output)
	prefix := stagingPrefix(w.Output)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	host := hostTag()
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if st, err := os.Lstat(dir); err != nil {
			continue
		} else if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != currentUID() {
			w.warnf("leaving %s: it belongs to another user; remove it once no prepare of %s runs", dir, w.Output)
			continue
		}
		m := ownerRE().FindStringSubmatch(strings.TrimPrefix(e.Name(), prefix))
		if m == nil || m[1] != host {
			w.warnf("leaving %s: it was not made by a prepare on this host (another host, or another tool); remove it once no prepare of %s runs", dir, w.Output)
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		if ownerAlive(pid, m[3]) {
			continue // its prepare may still be running
		}
		if holdsOldWorkspace(dir, w.Output) {
			w.warnf("leaving %s: it holds the old workspace of %s, which an interrupted or failed swap did not put back; move it back or remove it yourself", filepath.Join(dir, asideName), w.Output)
			continue
		}
		if err := removeTree(dir); err != nil {
			w.warnf("could not remove the abandoned staging directory %s: %v", dir, err)
		} else {
			w.warnf("removed the abandoned staging directory %s of an interrupted prepare", dir)
		}
	}
}

// asideName is the entry of a staging directory that holds the old
// workspace while the two-rename fallback of swap.Install runs, and
// keptMarker the file that marks a staging directory whose old workspace
// could not be put back.
const (
	asideName  = "old"
	keptMarker = "KEPT-OLD-WORKSPACE"
)

// markKept marks stage as holding the only copy of output's old
// workspace (at old), so that cleanStale never removes it.
func markKept(stage, old, output string) error {
	note := fmt.Sprintf("%s is the old workspace of %s: a prepare could not put it back.\n"+
		"flare-slurm never deletes this directory. Move it back with:\n  mv %s %s\n",
		old, output, shell.Quote(old), shell.Quote(output))
	return fsx.WriteExclusive(filepath.Join(stage, keptMarker), []byte(note), 0o600, true)
}

// holdsOldWorkspace says whether the abandoned staging directory dir may
// hold the only copy of output's old workspace: the fallback moved it
// aside (dir/old exists) and either the swap was marked as failed or it
// never completed (output is absent: killed between the two renames).
func holdsOldWorkspace(dir, output string) bool {
	if _, err := os.Lstat(filepath.Join(dir, asideName)); err != nil {
		return false
	}
	if _, err := os.Lstat(filepath.Join(dir, keptMarker)); err == nil {
		return true
	}
	_, err := os.Lstat(output)
	return errors.Is(err, fs.ErrNotExist)
}

// currentUID is os.Geteuid; tests replace it. Only staging directories
// owned by this user are ever removed.
var currentUID = os.Geteuid

// removeTree removes dir and everything in it: files are unlinked by a few
// workers in parallel, then the directories deepest first. Directories
// that the kit had read-only are made writable first.
func removeTree(dir string) error {
	var files, dirs []string
	var walk func(string) error
	walk = func(d string) error {
		entries, err := os.ReadDir(d)
		if err != nil && errors.Is(err, fs.ErrPermission) {
			if os.Chmod(d, 0o700) == nil {
				entries, err = os.ReadDir(d)
			}
		}
		if err != nil {
			return err
		}
		dirs = append(dirs, d)
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			} else {
				files = append(files, p)
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) && len(dirs) == 0 {
			return nil
		}
		return chmodAndRemoveAll(dir)
	}
	for _, d := range dirs {
		// Unlinking needs write permission on the directory.
		if st, err := os.Lstat(d); err == nil && st.Mode().Perm()&0o300 != 0o300 {
			_ = os.Chmod(d, 0o700)
		}
	}
	if err := parallel(context.Background(), len(files), len(files), func(i int) error {
		if err := unix.Unlink(files[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "unlink", Path: files[i], Err: err}
		}
		return nil
	}); err != nil {
		return chmodAndRemoveAll(dir)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			return chmodAndRemoveAll(dir)
		}
	}
	return nil
}

func chmodAndRemoveAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
