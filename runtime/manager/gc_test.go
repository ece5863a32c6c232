package manager

import (
	"context"
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
