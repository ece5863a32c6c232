package main

import (
	"context"
	"testing"
)

// TestFollowerForgetsOnlyWhenIdle: wait --follow drops the compiled
// schemas and parsed templates at a memory release only when no launch is
// running (one that runs is using them) and none began since the release
// before (a serial burst would otherwise compile them again in each gap).
func TestFollowerForgetsOnlyWhenIdle(t *testing.T) {
	forgets := 0
	f := &follower{stops: map[string]context.CancelFunc{}, forget: func() { forgets++ }}
	f.stops["7"] = func() {}
	f.started++
	f.forgetIfIdle()
	if forgets != 0 {
		t.Fatalf("forgot the launch caches while launch 7 runs")
	}
	delete(f.stops, "7")
	f.started++ // launch 8 began and ended within the interval
	f.forgetIfIdle()
	if forgets != 0 {
		t.Fatalf("forgot the launch caches at the release right after launch 8 began (the burst may go on)")
	}
	f.forgetIfIdle()
	if forgets != 1 {
		t.Fatalf("%d forgets after a whole interval without a launch, want 1", forgets)
	}
}
