package main

import (
	"context"
	"testing"
)

// TestFollowerForgetsOnlyWhenNoLaunchRuns: wait --follow drops the
// compiled schemas and parsed templates at a memory release only when no
// launch is running (one that runs is using them, and a burst would
// compile them again for every launch).
func TestFollowerForgetsOnlyWhenNoLaunchRuns(t *testing.T) {
	forgets := 0
	f := &follower{stops: map[string]context.CancelFunc{"7": func() {}}, forget: func() { forgets++ }}
	f.forgetIfIdle()
	if forgets != 0 {
		t.Fatalf("forgot the launch caches while launch 7 runs")
	}
	delete(f.stops, "7")
	f.forgetIfIdle()
	if forgets != 1 {
		t.Fatalf("%d forgets once no launch runs, want 1", forgets)
	}
}
