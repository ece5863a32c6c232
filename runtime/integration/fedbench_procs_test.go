package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-slurm/flare-slurm/internal/procbench"
)

// Sample is the parent host's side of the run at one moment: the processes
// of the parents' sessions (each parent is a session leader; whatever it
// starts — Slurm commands, flare-slurm processes — stays in its session)
// and their memory as the kernel accounts it (smaps_rollup).
type Sample struct {
	At        time.Time `json:"-"`
	Seconds   float64   `json:"t"` // since the run's start
	Processes int       `json:"processes"`
	parents   int       // python3 processes among them
	// PrivateKiB is Private_Clean + Private_Dirty, summed: what only these
	// processes hold. AnonKiB is their anonymous memory.
	PrivateKiB int64 `json:"private_kib"`
	AnonKiB    int64 `json:"anon_kib"`
	// ParentsKiB is the part of PrivateKiB held by the NVFlare parents
	// themselves (the python3 processes); the rest is what they started
	// (the start scripts' shells, the launcher's commands and, for
	// flare-slurm, its wait --follow).
	ParentsKiB int64 `json:"parents_private_kib"`
	// Parents is the parents' private memory by kind, and their threads.
	Parents ParentMemory `json:"parents"`
	// Running is how many of the run's Slurm jobs were running then (from
	// accounting, after the run).
	Running int `json:"running"`
}

// others are the processes and private memory of the sample that are not
// the NVFlare parents.
func (s Sample) others() (int, int64) {
	return s.Processes - s.parents, s.PrivateKiB - s.ParentsKiB
}

// sessionOf reads the session id from the content of /proc/PID/stat (the
// sixth field; the command name, second, may hold spaces and parentheses).
func sessionOf(stat string) (int, error) {
	_, sid, err := parseStat(stat)
	return sid, err
}

// parseStat reads the command name and session id of /proc/PID/stat.
func parseStat(stat string) (string, int, error) {
	open := strings.IndexByte(stat, '(')
	i := strings.LastIndexByte(stat, ')')
	if open < 0 || i < open {
		return "", 0, fmt.Errorf("stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	// state ppid pgrp session
	if len(f) < 4 {
		return "", 0, fmt.Errorf("stat %q: too few fields", stat)
	}
	sid, err := strconv.Atoi(f[3])
	return stat[open+1 : i], sid, err
}

// SampleSessions sums the processes of the given sessions. A process that
// ends while it is read is left out.
func SampleSessions(sessions []int) (Sample, error) {
	s := Sample{At: time.Now()}
	want := map[int]bool{}
	for _, sid := range sessions {
		want[sid] = true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return s, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		comm, sid, err := parseStat(string(stat))
		if err != nil || !want[sid] {
			continue
		}
		if strings.HasPrefix(comm, "python") {
			// A parent: its smaps, by kind, gives the totals too.
			pm, err := readParentMemory(pid)
			if err != nil {
				continue // ended meanwhile
			}
			s.Processes++
			s.parents++
			s.PrivateKiB += pm.privateKiB
			s.AnonKiB += pm.anonKiB
			s.ParentsKiB += pm.privateKiB
			s.Parents.add(pm)
			continue
		}
		m, err := procbench.ReadMemory(pid)
		if err != nil {
			continue // ended meanwhile, or a kernel thread
		}
		s.Processes++
		s.PrivateKiB += m.Private() >> 10
		s.AnonKiB += m.Anonymous >> 10
	}
	return s, nil
}

func TestSessionOf(t *testing.T) {
	for stat, want := range map[string]int{
		"4242 (python3) S 1 4242 4242 0 -1 4194560 ...": 4242,
		"77 (flare slurm) S 70 71 72 0 -1":              72,
		"5 (a (b) c)) R 1 2 3 4":                        3,
	} {
		got, err := sessionOf(stat)
		if err != nil || got != want {
			t.Errorf("SessionOf(%q) = %d, %v; want %d", stat, got, err, want)
		}
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2"} {
		if _, err := sessionOf(bad); err == nil {
			t.Errorf("SessionOf(%q): no error", bad)
		}
	}
}

// A session of two processes (a shell and its sleep) is found whole, with
// memory, and nothing of another session is counted.
func TestSampleSessions(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	var s Sample
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if s, err = SampleSessions([]int{cmd.Process.Pid}); err != nil {
			t.Fatal(err)
		}
		if s.Processes == 2 || time.Now().After(deadline) {
			break
		}
	}
	if s.Processes != 2 || s.PrivateKiB <= 0 || s.AnonKiB <= 0 {
		t.Errorf("sample %+v, want the shell and its sleep with memory", s)
	}
	if own, _ := SampleSessions([]int{os.Getpid() + 1<<22}); own.Processes != 0 {
		t.Errorf("a session nobody leads has %d processes", own.Processes)
	}
}
