// Package lazy holds a value made on first use and kept until the process
// forgets it: sync.OnceValues that can start over. A long-lived process
// that needs a costly value only now and then (the launcher bridge's
// follower: compiled schemas and parsed templates, in bursts of launches)
// forgets it between bursts instead of keeping it for its whole life.
package lazy

import "sync"

// Value is a value made by its function on first use. The zero Value is
// not usable; make one with New.
type Value[T any] struct {
	make func() (T, error)

	mu   sync.Mutex
	made bool
	v    T
	err  error
}

// New returns a Value that make makes on first use.
func New[T any](make func() (T, error)) *Value[T] {
	return &Value[T]{make: make}
}

// Get returns the value (and make's error), making it on the first call
// after New or Forget; concurrent callers wait for one make.
func (l *Value[T]) Get() (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.made {
		l.v, l.err = l.make()
		l.made = true
	}
	return l.v, l.err
}

// Forget drops the value: the next Get makes it again. A caller that
// already has the value keeps it.
func (l *Value[T]) Forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.v, l.err, l.made = *new(T), nil, false
}
