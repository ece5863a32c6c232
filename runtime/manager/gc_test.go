package manager

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// A job dir without a handle that is younger than a launch can take may
// belong to a launch in progress in another process: gc keeps it.
func TestGCKeepsYoungHandlelessDir(t *testing.T) {
	e := newEnv(t)
	dir := e.m.JobDir("launching")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	os.Chtimes(dir, now.Add(-2*time.Second), now.Add(-2*time.Second))
	entries, err := e.m.GC(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Removed || entries[0].Verdict != gcUnknown || !strings.Contains(entries[0].Reason, "launch") {
		t.Fatalf("young dir: %+v", entries)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("young handleless dir removed: %v", err)
	}
	old := now.Add(-10 * time.Minute)
	os.Chtimes(dir, old, old)
	entries, _ = e.m.GC(context.Background(), true)
	if len(entries) != 1 || !entries[0].Removed {
		t.Fatalf("old dir: %+v", entries)
	}
}

// A status refresh logs a squeue row of a job it did not ask about; gc,
// which shares the asking with it, says nothing of such a row (its
// output is the entries, and it has always been quiet about strays).
func TestOnlyRefreshWarnsOfAStrayRow(t *testing.T) {
	e := newEnv(t)
	h := e.launch("live")
	var logs strings.Builder
	e.m.log = slog.New(slog.NewTextHandler(&logs, nil))
	e.slurm.mu.Lock()
	e.slurm.squeueExtra = "555|RUNNING|1000|nvfl:x|y|None\n"
	e.slurm.mu.Unlock()
	if _, err := e.m.GC(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Fatalf("gc logged: %s", logs.String())
	}
	e.poll(h)
	if !strings.Contains(logs.String(), "not asked about") || !strings.Contains(logs.String(), "slurm_job_id=555") {
		t.Fatalf("refresh did not log the stray row: %q", logs.String())
	}
}
