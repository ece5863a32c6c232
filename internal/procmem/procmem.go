// Package procmem holds the runtime's memory settings of a flare-slurm
// process (the CLI's GC and profiling knobs), chosen per command; above
// all, it keeps a long-lived flare-slurm process small. A `wait`
// process lives as long as its batch job and a site runs one per job, so
// its private memory is paid hundreds of times over.
//
// Left alone, the Go runtime lets a small process's heap grow to 4 MiB of
// garbage before its first collection, and keeps the pages afterwards.
// A watcher that polls has a tiny live heap, so it does better to collect
// and hand the freed pages back to the kernel after each poll: a collection
// of a heap this small costs well under a millisecond of CPU, once per poll
// interval.
package procmem

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// NoProfiling turns heap profiling off: no heap profile is ever written
// from the CLI, and every sampled allocation would keep a profiling bucket
// resident for the life of the process (a wait lives as long as its job).
// Call it first in main.
func NoProfiling() { runtime.MemProfileRate = 0 }

// ShortLived stops collecting garbage in a process that is short-lived and
// allocates little (prepare: about 2 MiB for a small kit): collecting only
// costs time and the memory of the collector's threads. A 256 MiB limit
// brings the collector back should a huge input need it.
func ShortLived() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(256 << 20)
}

// OneP runs the process on one P from now on: one set of per-P allocation
// caches and one GC worker. A watcher sleeps, execs and parses small
// answers; it has no use for parallelism. Call it before the start-up work,
// so that work fills one set of caches, not two.
func OneP() { runtime.GOMAXPROCS(1) }

// SmallHeapGOGC is the GC percentage of a long-lived wait: a collection
// when the heap has grown by half of what is live, not by all of it.
const SmallHeapGOGC = 50

// SmallHeap sets SmallHeapGOGC. A wait's live heap is well under 1 MiB,
// so the runtime's smallest heap goal (4 MiB at GOGC=100, scaled by
// GOGC) is what its heap reaches between collections: 2 MiB instead.
// The launcher bridge's follower launches jobs in bursts (a server's
// serial starts, 100-200 KiB of garbage each); during a burst of 100
// launches its anonymous memory was 6.6 MiB at GOGC=100 and 4.4 MiB at
// 50 (BenchmarkBridgeLaunch/follower in runtime/site, anon-KiB), for a
// collection of well under a millisecond every dozen launches.
func SmallHeap() { debug.SetGCPercent(SmallHeapGOGC) }

// ReleaseEvery collects the garbage and returns the freed pages to the
// kernel now (the garbage of start-up), and then every interval until ctx
// is done; before each release after the first it calls forget, when not
// nil, to drop what the process can make again (wait --follow: the
// compiled schemas and parsed templates once no launch runs). The channel
// it returns is closed once no release runs or will run.
func ReleaseEvery(ctx context.Context, interval time.Duration, forget func()) <-chan struct{} {
	debug.FreeOSMemory()
	stopped := make(chan struct{})
	if interval <= 0 {
		close(stopped)
		return stopped
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if forget != nil {
					forget()
				}
				debug.FreeOSMemory()
			}
		}
	}()
	return stopped
}
