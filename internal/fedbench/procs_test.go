package fedbench

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

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
