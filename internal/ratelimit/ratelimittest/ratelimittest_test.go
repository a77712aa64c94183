package ratelimittest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/suitecheck"
)

// memStore is an in-memory ratelimit.Store for the suite's own tests.
type memStore struct {
	mu sync.Mutex
	n  map[string]int
}

func newMemStore() *memStore { return &memStore{n: map[string]int{}} }

func (m *memStore) Take(_ context.Context, p ratelimit.TakeParams) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := fmt.Sprintf("%s/%d/%d", p.Name, p.Window, p.Shard)
	if m.n[k] >= p.Max {
		return m.n[k], ratelimit.ErrFull
	}
	m.n[k]++
	return m.n[k], nil
}

func TestRunMemStore(t *testing.T) {
	Run(t, Harness{NewStore: func(*testing.T) ratelimit.Store { return newMemStore() }})
}

func TestSuiteFindsBrokenStores(t *testing.T) {
	suitecheck.RequireCaught(t, "TestBrokenStore", map[string][]string{
		"no max":       {"TakeUpToMax", "ConcurrentTakesNeverExceedMax"},
		"one counter":  {"CountersAreSeparate"},
		"racy counter": {"ConcurrentTakesNeverExceedMax"},
	})
}

func TestBrokenStore(t *testing.T) {
	name := suitecheck.Broken(t)
	stores := map[string]func() ratelimit.Store{
		"no max":       func() ratelimit.Store { return noMax{newMemStore()} },
		"one counter":  func() ratelimit.Store { return oneCounter{newMemStore()} },
		"racy counter": func() ratelimit.Store { return &racy{n: map[string]int{}} },
	}
	Run(t, Harness{NewStore: func(*testing.T) ratelimit.Store { return stores[name]() }})
}

// noMax never refuses.
type noMax struct{ *memStore }

func (s noMax) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	p.Max = 1 << 30
	return s.memStore.Take(ctx, p)
}

// oneCounter counts every window and shard of a name together.
type oneCounter struct{ *memStore }

func (s oneCounter) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	p.Window, p.Shard, p.Name = 0, 0, "all"
	return s.memStore.Take(ctx, p)
}

// racy reads and writes the counter without holding one lock across both.
type racy struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *racy) Take(_ context.Context, p ratelimit.TakeParams) (int, error) {
	k := fmt.Sprintf("%s/%d/%d", p.Name, p.Window, p.Shard)
	r.mu.Lock()
	n := r.n[k]
	r.mu.Unlock()
	if n >= p.Max {
		return n, ratelimit.ErrFull
	}
	time.Sleep(time.Millisecond) // widen the window between the read and the write
	r.mu.Lock()
	r.n[k] = n + 1
	r.mu.Unlock()
	return n + 1, nil
}
