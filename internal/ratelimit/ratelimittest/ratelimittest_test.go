package ratelimittest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/suitecheck"
)

// memStore is an in-memory ratelimit.Store for the suite's own tests.
type memStore struct {
	mu    sync.Mutex
	n     map[string]int
	slots map[string]memSlot
}

type memSlot struct {
	holder string
	until  time.Time
}

func newMemStore() *memStore { return &memStore{n: map[string]int{}, slots: map[string]memSlot{}} }

func (m *memStore) Hold(_ context.Context, p ratelimit.SlotParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := fmt.Sprintf("%s/%d", p.Name, p.Slot)
	if cur, ok := m.slots[k]; ok && cur.holder != "" && cur.holder != p.Holder && cur.until.After(p.Now) {
		return ratelimit.ErrFull
	}
	m.slots[k] = memSlot{holder: p.Holder, until: p.Until}
	return nil
}

func (m *memStore) Free(_ context.Context, p ratelimit.SlotParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := fmt.Sprintf("%s/%d", p.Name, p.Slot)
	if cur, ok := m.slots[k]; !ok || cur.holder != p.Holder {
		return ratelimit.ErrNotHolder
	}
	m.slots[k] = memSlot{}
	return nil
}

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

// ListUsage implements ratelimit.Lister over the maps.
func (m *memStore) ListUsage(_ context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	return m.listUsage(p, false, false), nil
}

// listUsage lists p's usage; loose takes any name the limit's starts
// (another limit's too), stale lists run-out holds too.
func (m *memStore) listUsage(p ratelimit.ListParams, loose, stale bool) []ratelimit.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := ratelimit.NewUsages(p)
	belongs := func(rec string) (string, bool) {
		if loose && strings.HasPrefix(rec, p.Limit.Name) {
			if _, k, ok := strings.Cut(rec, "#"); ok {
				return ratelimit.KeyedName(p.Limit.Name, k), true
			}
			return p.Limit.Name, true
		}
		return rec, true
	}
	for k, n := range m.n {
		rest, shard, _ := cutLast(k)
		rec, win, _ := cutLast(rest)
		_ = shard
		if r, ok := belongs(rec); ok && win == fmt.Sprint(p.Limit.Window(p.Now)) {
			g.AddStarts(r, n)
		}
	}
	for k, sl := range m.slots {
		rec, slot, _ := cutLast(k)
		var i int
		fmt.Sscan(slot, &i)
		if r, ok := belongs(rec); ok && sl.holder != "" && (stale || sl.until.After(p.Now)) {
			g.AddHold(r, ratelimit.Hold{Slot: i, Holder: sl.holder, Until: sl.until})
		}
	}
	return g.List()
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndex(s, "/")
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// looseList lists other limits' records whose names start with the limit's.
type looseList struct{ *memStore }

func (s looseList) ListUsage(_ context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	return s.listUsage(p, true, false), nil
}

// staleList lists run-out holds as live.
type staleList struct{ *memStore }

func (s staleList) ListUsage(_ context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	return s.listUsage(p, false, true), nil
}

func TestRunMemStore(t *testing.T) {
	Run(t, Harness{NewStore: func(*testing.T) ratelimit.Store { return newMemStore() }})
}

func TestSuiteFindsBrokenStores(t *testing.T) {
	suitecheck.RequireCaught(t, "TestBrokenStore", map[string][]string{
		"no max":       {"TakeUpToMax", "ConcurrentTakesNeverExceedMax"},
		"one counter":  {"CountersAreSeparate"},
		"racy counter": {"ConcurrentTakesNeverExceedMax"},
		"no expiry":    {"HoldExpires"},
		"free by any":  {"HoldAndFree", "HoldExpires"},
		"one slot":     {"SlotsAreSeparate"},
		"racy slot":    {"ConcurrentHoldsOneWinner"},
		"no renewal":   {"HoldAndFree"},
		"loose list":   {"ListUsageOfStarts", "ListUsageOfSlots"},
		"stale list":   {"ListUsageOfSlots"},
	})
}

func TestBrokenStore(t *testing.T) {
	name := suitecheck.Broken(t)
	stores := map[string]func() ratelimit.Store{
		"no max":       func() ratelimit.Store { return noMax{newMemStore()} },
		"one counter":  func() ratelimit.Store { return oneCounter{newMemStore()} },
		"racy counter": func() ratelimit.Store { return &racy{memStore: newMemStore(), n: map[string]int{}} },
		"no expiry":    func() ratelimit.Store { return noExpiry{newMemStore()} },
		"free by any":  func() ratelimit.Store { return freeByAny{newMemStore()} },
		"one slot":     func() ratelimit.Store { return oneSlot{newMemStore()} },
		"racy slot":    func() ratelimit.Store { return &racySlot{memStore: newMemStore()} },
		"no renewal":   func() ratelimit.Store { return noRenewal{newMemStore()} },
		"loose list":   func() ratelimit.Store { return looseList{newMemStore()} },
		"stale list":   func() ratelimit.Store { return staleList{newMemStore()} },
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
	*memStore
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

// noExpiry keeps a hold forever.
type noExpiry struct{ *memStore }

func (s noExpiry) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	p.Until = p.Until.Add(1000 * time.Hour)
	p.Now = time.Time{}
	return s.memStore.Hold(ctx, p)
}

// freeByAny frees whoever holds the slot.
type freeByAny struct{ *memStore }

func (s freeByAny) Free(_ context.Context, p ratelimit.SlotParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots[fmt.Sprintf("%s/%d", p.Name, p.Slot)] = memSlot{}
	return nil
}

// oneSlot keeps every slot of every limit in one record.
type oneSlot struct{ *memStore }

func (s oneSlot) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	p.Name, p.Slot = "all", 0
	return s.memStore.Hold(ctx, p)
}

func (s oneSlot) Free(ctx context.Context, p ratelimit.SlotParams) error {
	p.Name, p.Slot = "all", 0
	return s.memStore.Free(ctx, p)
}

// racySlot reads the slot and writes it without holding one lock across
// both.
type racySlot struct{ *memStore }

func (s *racySlot) Hold(_ context.Context, p ratelimit.SlotParams) error {
	k := fmt.Sprintf("%s/%d", p.Name, p.Slot)
	s.mu.Lock()
	cur, ok := s.slots[k]
	s.mu.Unlock()
	if ok && cur.holder != "" && cur.holder != p.Holder && cur.until.After(p.Now) {
		return ratelimit.ErrFull
	}
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	s.slots[k] = memSlot{holder: p.Holder, until: p.Until}
	s.mu.Unlock()
	return nil
}

// noRenewal refuses its own holder's renewal.
type noRenewal struct{ *memStore }

func (s noRenewal) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	s.mu.Lock()
	cur, ok := s.slots[fmt.Sprintf("%s/%d", p.Name, p.Slot)]
	s.mu.Unlock()
	if ok && cur.holder == p.Holder && cur.until.After(p.Now) {
		return ratelimit.ErrFull
	}
	return s.memStore.Hold(ctx, p)
}
