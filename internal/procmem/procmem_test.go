package procmem

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	OneP()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS = %d, want 1", n)
	}
}

func TestSmallHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	SmallHeap()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if got := s[0].Value.Uint64(); got != SmallHeapGOGC || SmallHeapGOGC >= 100 {
		t.Fatalf("GOGC = %d after SmallHeap, want %d (below the default 100)", got, SmallHeapGOGC)
	}
}

// ReleaseEvery collects at once and then once per interval, and stops
// collecting when its context ends.
func TestReleaseEveryCollectsEachIntervalUntilDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	before := forcedGCs()
	ReleaseEvery(ctx, 20*time.Millisecond)
	if forcedGCs() == before {
		t.Fatal("no collection when the watcher started")
	}
	deadline := time.Now().Add(10 * time.Second)
	for forcedGCs() < before+4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d forced collections in 10 s at a 20 ms interval", forcedGCs()-before)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	time.Sleep(50 * time.Millisecond) // a tick already due may still run
	stopped := forcedGCs()
	time.Sleep(200 * time.Millisecond)
	if got := forcedGCs(); got != stopped {
		t.Fatalf("%d collections after the context ended", got-stopped)
	}
}
