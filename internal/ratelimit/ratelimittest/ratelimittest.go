// Package ratelimittest is the conformance suite of ratelimit.Store.
// Every adapter runs it from one test:
//
//	func TestRateLimitStore(t *testing.T) {
//		ratelimittest.Run(t, ratelimittest.Harness{NewStore: func(t *testing.T) ratelimit.Store { return newStore(t) }})
//	}
package ratelimittest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ratelimit"
)

// Harness is what the suite needs of an adapter.
type Harness struct {
	// NewStore returns the store under test, once per case; cases use
	// unique limit names, so it may be shared.
	NewStore func(t *testing.T) ratelimit.Store
}

// Case is one conformance case.
type Case struct {
	Name string
	Func func(t *testing.T, h Harness)
}

// Cases lists every case.
func Cases() []Case {
	return []Case{
		{"TakeUpToMax", TestTakeUpToMax},
		{"CountersAreSeparate", TestCountersAreSeparate},
		{"ConcurrentTakesNeverExceedMax", TestConcurrentTakesNeverExceedMax},
		{"HoldAndFree", TestHoldAndFree},
		{"HoldExpires", TestHoldExpires},
		{"SlotsAreSeparate", TestSlotsAreSeparate},
		{"ConcurrentHoldsOneWinner", TestConcurrentHoldsOneWinner},
		{"KeyedRecordsAreSeparate", TestKeyedRecordsAreSeparate},
		{"PruneRemovesIdleRecords", TestPruneRemovesIdleRecords},
		{"ListUsageOfStarts", TestListUsageOfStarts},
		{"ListUsageOfSlots", TestListUsageOfSlots},
	}
}

// Run runs every case against the stores h makes.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) { c.Func(t, h) })
	}
}

var (
	prefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return "rl" + hex.EncodeToString(b[:])
	}()
	seq atomic.Int64
)

func uniqueName() string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

var expires = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// TestTakeUpToMax: Take counts 1, 2, … up to Max, then refuses with
// ErrFull and the count, whatever it is asked.
func TestTakeUpToMax(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	p := ratelimit.TakeParams{Name: uniqueName(), Window: 7_183_025_016, Shard: 0, Max: 3, Expires: expires} // a window of 250 ms today: more than 32 bits
	for want := 1; want <= 3; want++ {
		n, err := s.Take(t.Context(), p)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	for range 2 {
		n, err := s.Take(t.Context(), p)
		require.ErrorIs(t, err, ratelimit.ErrFull)
		require.Equal(t, 3, n)
	}
	p.Max = 2 // lowered: still full
	_, err := s.Take(t.Context(), p)
	require.ErrorIs(t, err, ratelimit.ErrFull)
	p.Max = 4 // raised: one more
	n, err := s.Take(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 4, n)
}

// TestCountersAreSeparate: names, windows and shards count apart.
func TestCountersAreSeparate(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	name, other := uniqueName(), uniqueName()
	for _, p := range []ratelimit.TakeParams{
		{Name: name, Window: 1, Shard: 0}, {Name: name, Window: 2, Shard: 0},
		{Name: name, Window: 1, Shard: 1}, {Name: other, Window: 1, Shard: 0},
	} {
		p.Max, p.Expires = 1, expires
		n, err := s.Take(t.Context(), p)
		require.NoError(t, err, "%+v", p)
		require.Equal(t, 1, n, "%+v", p)
	}
}

// TestConcurrentTakesNeverExceedMax: 64 concurrent takes of a counter of
// Max 10 grant exactly 10.
func TestConcurrentTakesNeverExceedMax(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	p := ratelimit.TakeParams{Name: uniqueName(), Window: 1, Max: 10, Expires: expires}
	var granted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			_, err := s.Take(t.Context(), p)
			switch {
			case err == nil:
				granted.Add(1)
			case !isFull(err):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(10), granted.Load())
}

func isFull(err error) bool { return errors.Is(err, ratelimit.ErrFull) }

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func slot(name string, holder string, until time.Duration, now time.Duration) ratelimit.SlotParams {
	return ratelimit.SlotParams{Name: name, Slot: 0, Holder: holder, Until: t0.Add(until), Now: t0.Add(now)}
}

// TestHoldAndFree: a slot is held by one holder at a time; its holder
// renews it; Free by another holder, or of a slot never held or already
// freed, is refused with ErrNotHolder; once freed anyone holds it.
func TestHoldAndFree(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	ctx, name := t.Context(), uniqueName()
	require.ErrorIs(t, s.Free(ctx, slot(name, "a", 0, 0)), ratelimit.ErrNotHolder, "never held")
	require.NoError(t, s.Hold(ctx, slot(name, "a", time.Minute, 0)))
	require.ErrorIs(t, s.Hold(ctx, slot(name, "b", time.Minute, time.Second)), ratelimit.ErrFull, "a live hold of another")
	require.NoError(t, s.Hold(ctx, slot(name, "a", 2*time.Minute, time.Second)), "its holder renews it")
	require.ErrorIs(t, s.Hold(ctx, slot(name, "b", 3*time.Minute, 90*time.Second)), ratelimit.ErrFull, "renewed past the first Until")
	require.ErrorIs(t, s.Free(ctx, slot(name, "b", 0, 0)), ratelimit.ErrNotHolder, "not b's")
	require.NoError(t, s.Free(ctx, slot(name, "a", 0, 0)))
	require.ErrorIs(t, s.Free(ctx, slot(name, "a", 0, 0)), ratelimit.ErrNotHolder, "freed already")
	require.NoError(t, s.Hold(ctx, slot(name, "b", time.Minute, 2*time.Second)), "free at once, before the old Until")
}

// TestHoldExpires: a hold not renewed ends at its Until (a crashed
// holder's slot comes back), and its old holder can no longer free it
// once another holds it.
func TestHoldExpires(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	ctx, name := t.Context(), uniqueName()
	require.NoError(t, s.Hold(ctx, slot(name, "a", time.Minute, 0)))
	require.ErrorIs(t, s.Hold(ctx, slot(name, "b", 2*time.Minute, time.Minute-time.Millisecond)), ratelimit.ErrFull)
	require.NoError(t, s.Hold(ctx, slot(name, "b", 2*time.Minute, time.Minute)), "at Until the slot is free")
	require.ErrorIs(t, s.Free(ctx, slot(name, "a", 0, 0)), ratelimit.ErrNotHolder, "the old holder's free is refused")
	require.ErrorIs(t, s.Hold(ctx, slot(name, "a", 3*time.Minute, 90*time.Second)), ratelimit.ErrFull, "and so is its renewal")
}

// TestSlotsAreSeparate: slots of one limit, and limits, hold apart; the
// slots do not touch the limit's window counters.
func TestSlotsAreSeparate(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	ctx, name, other := t.Context(), uniqueName(), uniqueName()
	for i, p := range []ratelimit.SlotParams{
		{Name: name, Slot: 0}, {Name: name, Slot: 1}, {Name: other, Slot: 0}, {Name: name, Slot: 7_000},
	} {
		p.Holder, p.Until, p.Now = fmt.Sprint("h", i), t0.Add(time.Minute), t0
		require.NoError(t, s.Hold(ctx, p), "%+v", p)
	}
	n, err := s.Take(ctx, ratelimit.TakeParams{Name: name, Window: 0, Max: 1, Expires: expires})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TestConcurrentHoldsOneWinner: of 32 holders taking one free slot at
// once, exactly one holds it.
func TestConcurrentHoldsOneWinner(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	name := uniqueName()
	var won atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			err := s.Hold(t.Context(), slot(name, fmt.Sprint("h", i), time.Minute, 0))
			switch {
			case err == nil:
				won.Add(1)
			case !isFull(err):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), won.Load())
}

// keys are key texts a keyed limit may be given: each must get records of
// its own, whatever it holds.
var keys = []string{"feeds.example.com", "a/b", "a#b", "a%23b", "a b", "a+b", "日本語", "#", "SLOT", "0"}

// TestKeyedRecordsAreSeparate: the counters and slots of a keyed limit's
// keys (ratelimit.KeyedName), whatever their text, count and hold apart
// from each other and from the limit's own.
func TestKeyedRecordsAreSeparate(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	ctx, name := t.Context(), uniqueName()
	records := []string{name}
	for _, k := range keys {
		records = append(records, ratelimit.KeyedName(name, k))
	}
	for _, rec := range records {
		n, err := s.Take(ctx, ratelimit.TakeParams{Name: rec, Window: 3, Max: 1, Expires: expires})
		require.NoError(t, err, "%q: a counter of its own", rec)
		require.Equal(t, 1, n)
		require.NoError(t, s.Hold(ctx, ratelimit.SlotParams{Name: rec, Slot: 0, Holder: "h-" + rec, Until: t0.Add(time.Minute), Now: t0}), "%q: a slot of its own", rec)
	}
	for _, rec := range records {
		_, err := s.Take(ctx, ratelimit.TakeParams{Name: rec, Window: 3, Max: 1, Expires: expires})
		require.ErrorIs(t, err, ratelimit.ErrFull, "%q", rec)
	}
}

// TestPruneRemovesIdleRecords: a store that keeps no time to live
// (ratelimit.Pruner) removes the counters of ended windows and the slots
// free or run out for ratelimit.SlotIdle, and nothing live: a live
// counter keeps its count and a live slot its holder.
func TestPruneRemovesIdleRecords(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	p, ok := s.(ratelimit.Pruner)
	if !ok {
		t.Skip("the store removes idle records by its own time to live (DynamoDB TTL)")
	}
	ctx, name := t.Context(), uniqueName()
	// Long ago, so that no other case's records are old enough to go.
	base := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	idle, live := ratelimit.KeyedName(name, "idle/host"), ratelimit.KeyedName(name, "live/host")
	for w := range int64(3) {
		_, err := s.Take(ctx, ratelimit.TakeParams{Name: idle, Window: w, Max: 5, Expires: base.Add(time.Duration(w) * time.Second)})
		require.NoError(t, err)
	}
	_, err := s.Take(ctx, ratelimit.TakeParams{Name: live, Window: 9, Max: 2, Expires: base.Add(48 * time.Hour)})
	require.NoError(t, err)
	require.NoError(t, s.Hold(ctx, ratelimit.SlotParams{Name: idle, Slot: 0, Holder: "crashed", Until: base, Now: base}))
	require.NoError(t, s.Hold(ctx, ratelimit.SlotParams{Name: live, Slot: 0, Holder: "alive", Until: base.Add(48 * time.Hour), Now: base}))

	now := base.Add(2 * time.Hour)
	n, err := p.PruneLimits(ctx, now)
	require.NoError(t, err)
	// A take may remove its name's windows before the previous one: of the
	// idle key's three ended windows, two at least are left to prune.
	require.GreaterOrEqual(t, n, 3, "ended windows and a slot run out for over an hour")
	// The idle key's window 0 starts afresh; the live one keeps its count.
	got, err := s.Take(ctx, ratelimit.TakeParams{Name: idle, Window: 0, Max: 5, Expires: base.Add(48 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 1, got, "the ended window's counter was removed")
	got, err = s.Take(ctx, ratelimit.TakeParams{Name: live, Window: 9, Max: 2, Expires: base.Add(48 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 2, got, "a live counter is kept")
	require.ErrorIs(t, s.Hold(ctx, ratelimit.SlotParams{Name: live, Slot: 0, Holder: "other", Until: now.Add(time.Minute), Now: now}), ratelimit.ErrFull, "a live slot is kept")
	require.ErrorIs(t, s.Free(ctx, ratelimit.SlotParams{Name: idle, Slot: 0, Holder: "crashed"}), ratelimit.ErrNotHolder, "the run-out slot was removed")
}

func lister(t *testing.T, s ratelimit.Store) ratelimit.Lister {
	t.Helper()
	l, ok := s.(ratelimit.Lister)
	require.True(t, ok, "%T must implement ratelimit.Lister: status shows every engine's limits", s)
	return l
}

// TestListUsageOfStarts: a rate limit's usage now is each key's starts
// in the window of Now, summed over its shards: not the previous
// window's, not another limit's (one whose name extends this one's), and
// every key's text comes back as it was given.
func TestListUsageOfStarts(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	l := lister(t, s)
	ctx, name := t.Context(), uniqueName()
	lim := ratelimit.Limit{Name: name, Starts: 10, Per: time.Second, Shards: 2}
	now := t0.Add(1500 * time.Millisecond)
	w := lim.Window(now)
	take := func(rec string, win int64, shard, n int) {
		for range n {
			_, err := s.Take(ctx, ratelimit.TakeParams{Name: rec, Window: win, Shard: shard, Max: 100, Expires: now.Add(time.Hour)})
			require.NoError(t, err)
		}
	}
	want := map[string]int{}
	for i, k := range keys {
		take(ratelimit.KeyedName(name, k), w, 0, i+1)
		want[k] = i + 1
	}
	take(ratelimit.KeyedName(name, "a/b"), w, 1, 2) // another shard of the window
	want["a/b"] += 2
	take(ratelimit.KeyedName(name, "old"), w-1, 0, 3) // the previous window only
	take(name, w, 0, 4)                               // the unkeyed record of the name
	take(name, w, 1, 1)
	take(ratelimit.KeyedName(name+"0", "a/b"), w, 0, 5) // another limit

	got, err := l.ListUsage(ctx, ratelimit.ListParams{Limit: lim, Keyed: true, Now: now})
	require.NoError(t, err)
	have := map[string]int{}
	for _, u := range got {
		require.Empty(t, u.Holds)
		have[u.Key] = u.Starts
	}
	require.Equal(t, want, have)

	got, err = l.ListUsage(ctx, ratelimit.ListParams{Limit: lim, Now: now})
	require.NoError(t, err)
	require.Equal(t, []ratelimit.Usage{{Key: "", Starts: 5}}, got, "the unkeyed limit: its own records only")

	got, err = l.ListUsage(ctx, ratelimit.ListParams{Limit: lim, Keyed: true, Now: now.Add(time.Second)})
	require.NoError(t, err)
	require.Empty(t, got, "no start in the next window yet")
}

// TestListUsageOfSlots: an in-flight limit's usage now is each key's
// slots held past Now, with their holders: a freed slot, a run-out one
// and another limit's are not listed.
func TestListUsageOfSlots(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStore(t)
	l := lister(t, s)
	ctx, name := t.Context(), uniqueName()
	lim := ratelimit.Limit{Name: name, InFlight: 3}
	hold := func(rec string, slot int, holder string, until time.Duration) {
		require.NoError(t, s.Hold(ctx, ratelimit.SlotParams{Name: rec, Slot: slot, Holder: holder, Until: t0.Add(until), Now: t0}))
	}
	busy, freed := ratelimit.KeyedName(name, "tenant/a#1"), ratelimit.KeyedName(name, "日本語")
	hold(busy, 0, "c1/item-a", time.Minute)
	hold(busy, 2, "c2/item-b", 2*time.Minute)
	hold(busy, 1, "c3/item-c", time.Second) // runs out before now
	hold(freed, 0, "c4/item-d", time.Minute)
	require.NoError(t, s.Free(ctx, ratelimit.SlotParams{Name: freed, Slot: 0, Holder: "c4/item-d"}))
	hold(ratelimit.KeyedName(name+"0", "tenant/a#1"), 0, "c5/item-e", time.Minute) // another limit
	hold(name, 1, "c6/item-f", time.Minute)                                        // the unkeyed record

	now := t0.Add(10 * time.Second)
	got, err := l.ListUsage(ctx, ratelimit.ListParams{Limit: lim, Keyed: true, Now: now})
	require.NoError(t, err)
	require.Len(t, got, 1, "one key holds live slots: %+v", got)
	require.Equal(t, "tenant/a#1", got[0].Key)
	require.Len(t, got[0].Holds, 2)
	require.Equal(t, ratelimit.Hold{Slot: 0, Holder: "c1/item-a", Until: t0.Add(time.Minute)}, got[0].Holds[0])
	require.Equal(t, ratelimit.Hold{Slot: 2, Holder: "c2/item-b", Until: t0.Add(2 * time.Minute)}, got[0].Holds[1])

	got, err = l.ListUsage(ctx, ratelimit.ListParams{Limit: lim, Now: now})
	require.NoError(t, err)
	require.Equal(t, []ratelimit.Usage{{Holds: []ratelimit.Hold{{Slot: 1, Holder: "c6/item-f", Until: t0.Add(time.Minute)}}}}, got)
}
