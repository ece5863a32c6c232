package lazy

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestValueMakesOnceUntilForgotten: concurrent first Gets make the value
// once and share it (and its error); after Forget the next Get makes it
// again, and a caller's earlier value is untouched.
func TestValueMakesOnceUntilForgotten(t *testing.T) {
	var makes, calling atomic.Int32
	boom := errors.New("boom")
	v := New(func() (*int, error) {
		n := int(makes.Add(1))
		// Stay in make until every goroutine is about to call Get (and a
		// little longer), so that a Get that does not wait for a make in
		// progress makes the value a second time.
		for deadline := time.Now().Add(5 * time.Second); calling.Load() < 8 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		return &n, boom
	})
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() {
			calling.Add(1)
			p, err := v.Get()
			if !errors.Is(err, boom) {
				t.Errorf("Get's error = %v, want make's", err)
			}
			got[i] = p
		})
	}
	wg.Wait()
	if makes.Load() != 1 {
		t.Fatalf("8 concurrent first Gets made the value %d times, want 1", makes.Load())
	}
	for _, p := range got {
		if p != got[0] {
			t.Fatalf("concurrent Gets returned different values: %v", got)
		}
	}
	v.Forget()
	again, _ := v.Get()
	if makes.Load() != 2 || again == got[0] || *again != 2 {
		t.Errorf("Get after Forget: %d makes, value %d (the first was %d), want a second make", makes.Load(), *again, *got[0])
	}
	if *got[0] != 1 {
		t.Errorf("Forget changed a value a caller holds: %d", *got[0])
	}
	if p, _ := v.Get(); p != again {
		t.Errorf("a second Get after Forget made the value again")
	}
}
