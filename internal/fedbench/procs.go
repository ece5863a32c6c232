package fedbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		m, err := procbench.ReadMemory(pid)
		if err != nil {
			continue // ended meanwhile, or a kernel thread
		}
		s.Processes++
		s.PrivateKiB += m.Private() >> 10
		s.AnonKiB += m.Anonymous >> 10
		if strings.HasPrefix(comm, "python") {
			s.parents++
			s.ParentsKiB += m.Private() >> 10
		}
	}
	return s, nil
}
