// Package clocktest holds a clock for tests: one the test sets and moves by
// hand, to hand to code that takes a NowFunc.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a controlled clock, safe for concurrent use. It reads the time it
// was last set to, moved by every Advance since; it never moves by itself.
// The zero Clock reads the zero time.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock that reads t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time. Its method value fits a NowFunc field.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d (back, when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
