package procmem

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
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

// ReleaseEvery collects at once and then once per interval, calling
// forget before each of the later collections (so that what it drops is
// collected at once), and stops both when its context ends.
func TestReleaseEveryCollectsEachIntervalUntilDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	before := forcedGCs()
	var forgets atomic.Int32
	var gcsAtForget atomic.Uint64
	stopped := ReleaseEvery(ctx, 20*time.Millisecond, func() {
		forgets.Add(1)
		gcsAtForget.Store(forcedGCs())
	})
	if forcedGCs() == before {
		t.Fatal("no collection when the watcher started")
	}
	if forgets.Load() != 0 {
		t.Fatal("forget was called at the start, before any interval")
	}
	deadline := time.Now().Add(10 * time.Second)
	for forcedGCs() < before+4 || forgets.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d forced collections and %d forgets in 10 s at a 20 ms interval", forcedGCs()-before, forgets.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the releases went on 10 s after the context ended")
	}
	atStop, forgotten := forcedGCs(), forgets.Load()
	if atStop <= gcsAtForget.Load() {
		t.Errorf("no collection after the last forget (%d forced collections at it, %d now)", gcsAtForget.Load(), atStop)
	}
	time.Sleep(100 * time.Millisecond) // more than four intervals
	if got := forcedGCs(); got != atStop || forgets.Load() != forgotten {
		t.Fatalf("%d collections and %d forgets after the releases stopped", got-atStop, forgets.Load()-forgotten)
	}
}
