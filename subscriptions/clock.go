package subscriptions

import (
	"sync"
	"time"
)

// Clock stamps operations. Now must return strictly increasing values.
type Clock interface {
	Now() int64
}

// SystemClock stamps with the wall clock in nanoseconds, made strictly
// increasing: a stamp that would not exceed the previous one becomes the
// previous one plus one. AtLeast lifts it above stamps issued before a
// restart.
type SystemClock struct {
	mu   sync.Mutex
	last int64
}

// Now returns the next stamp.
func (c *SystemClock) Now() int64 {
	t := time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t <= c.last {
		t = c.last + 1
	}
	c.last = t
	return t
}

// AtLeast makes every later stamp greater than t.
func (c *SystemClock) AtLeast(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t > c.last {
		c.last = t
	}
}

// FakeClock is a clock for tests: Now returns the current value and then
// adds one; Advance moves it forward.
type FakeClock struct {
	mu sync.Mutex
	t  int64
}

// NewFakeClock starts at t.
func NewFakeClock(t int64) *FakeClock { return &FakeClock{t: t} }

// Now returns the next stamp.
func (c *FakeClock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t++
	return c.t
}

// Peek returns the last stamp without taking a new one.
func (c *FakeClock) Peek() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t += int64(d)
}
