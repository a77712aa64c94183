// Package barstest is the conformance suite for bars.Store. Every adapter
// runs it from one test:
//
//	func TestBars(t *testing.T) { barstest.Run(t, func(t *testing.T) bars.Store { ... }) }
//
// The cases run in parallel and use assets no other case uses, so newStore
// may return a fresh store per case or one shared store.
package barstest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/bars"
)

// Run runs every case against the stores newStore makes.
func Run(t *testing.T, newStore func(t *testing.T) bars.Store) {
	t.Helper()
	cases := []struct {
		name string
		run  func(*testing.T, bars.Store, string)
	}{
		{"RoundTrip", testRoundTrip},
		{"NotFound", testNotFound},
		{"KeysAreIndependent", testKeysAreIndependent},
		{"FencedWrites", testFencedWrites},
		{"ConcurrentWriters", testConcurrentWriters},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t), fmt.Sprintf("%s-%d", c.name, time.Now().UnixNano()))
		})
	}
}

// minute is the bar minute the cases use.
var minute = time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)

func bar(asset string, fence int64, attempt int, close float64) bars.Bar {
	return bars.Bar{
		Asset:   asset,
		Minute:  minute,
		Open:    1.0842,
		High:    1.0871,
		Low:     1.0815,
		Close:   close,
		Fence:   fence,
		Attempt: attempt,
		// Whole seconds, which every backend stores exactly.
		WrittenAt: minute.Add(time.Minute + time.Duration(fence)*time.Second + time.Duration(attempt)*time.Millisecond).Truncate(time.Second),
	}
}

// requireBar fails unless got is want as stored and read back.
func requireBar(t *testing.T, want, got bars.Bar) {
	t.Helper()
	require.Equal(t, want.Asset, got.Asset, "asset")
	require.True(t, want.Minute.Equal(got.Minute), "minute: want %s, got %s", want.Minute, got.Minute)
	require.Equal(t, time.UTC, got.Minute.Location(), "minute is UTC")
	require.Equal(t, [4]float64{want.Open, want.High, want.Low, want.Close}, [4]float64{got.Open, got.High, got.Low, got.Close}, "OHLC")
	require.Equal(t, want.Fence, got.Fence, "fence")
	require.Equal(t, want.Attempt, got.Attempt, "attempt")
	require.True(t, want.WrittenAt.Equal(got.WrittenAt), "written at: want %s, got %s", want.WrittenAt, got.WrittenAt)
}

func get(t *testing.T, s bars.Store, asset string, m time.Time) bars.Bar {
	t.Helper()
	b, err := s.Get(t.Context(), asset, m)
	require.NoError(t, err, "get %s %s", asset, m)
	return b
}

// testRoundTrip: what Put writes, Get returns, for the same instant in any
// location.
func testRoundTrip(t *testing.T, s bars.Store, asset string) {
	b := bar(asset, 7, 2, 1.0833)
	require.NoError(t, s.Put(t.Context(), b))
	requireBar(t, b, get(t, s, asset, minute))
	requireBar(t, b, get(t, s, asset, minute.In(time.FixedZone("UTC+5", 5*3600))))
}

// testNotFound: Get of a bar never written returns ErrNotFound.
func testNotFound(t *testing.T, s bars.Store, asset string) {
	_, err := s.Get(t.Context(), asset, minute)
	require.ErrorIs(t, err, bars.ErrNotFound, "unknown asset")
	require.NoError(t, s.Put(t.Context(), bar(asset, 1, 1, 1)))
	_, err = s.Get(t.Context(), asset, minute.Add(time.Minute))
	require.ErrorIs(t, err, bars.ErrNotFound, "known asset, other minute")
}

// testKeysAreIndependent: bars of other assets or minutes neither fence
// nor overwrite each other.
func testKeysAreIndependent(t *testing.T, s bars.Store, asset string) {
	other := asset + "-other"
	high := bar(asset, 9, 9, 9)
	require.NoError(t, s.Put(t.Context(), high))
	lowOther := bar(other, 1, 1, 1)
	require.NoError(t, s.Put(t.Context(), lowOther), "another asset is not fenced by this one")
	nextMinute := bar(asset, 1, 1, 2)
	nextMinute.Minute = minute.Add(time.Minute)
	require.NoError(t, s.Put(t.Context(), nextMinute), "another minute is not fenced by this one")
	requireBar(t, high, get(t, s, asset, minute))
	requireBar(t, lowOther, get(t, s, other, minute))
	requireBar(t, nextMinute, get(t, s, asset, nextMinute.Minute))
}

// testFencedWrites: a write is accepted exactly when its (fence, attempt)
// is at least the stored one, fence first; a rejected one changes nothing.
func testFencedWrites(t *testing.T, s bars.Store, asset string) {
	cases := []struct {
		name     string
		fence    int64
		attempt  int
		accepted bool
	}{
		{name: "lower fence, higher attempt", fence: 4, attempt: 9, accepted: false},
		{name: "same fence, lower attempt", fence: 5, attempt: 2, accepted: false},
		{name: "equal", fence: 5, attempt: 3, accepted: true},
		{name: "same fence, higher attempt", fence: 5, attempt: 4, accepted: true},
		{name: "higher fence, lower attempt", fence: 6, attempt: 1, accepted: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := fmt.Sprintf("%s-%d", asset, i)
			stored := bar(a, 5, 3, 100)
			require.NoError(t, s.Put(t.Context(), stored))
			next := bar(a, c.fence, c.attempt, 200)
			next.High = 2
			err := s.Put(t.Context(), next)
			if c.accepted {
				require.NoError(t, err)
				requireBar(t, next, get(t, s, a, minute))
				return
			}
			require.ErrorIs(t, err, bars.ErrStale)
			requireBar(t, stored, get(t, s, a, minute))
		})
	}
}

// testConcurrentWriters: writers racing on one bar leave the one with the
// highest (fence, attempt), whatever the order; each of the others either
// succeeded first or got ErrStale.
func testConcurrentWriters(t *testing.T, s bars.Store, asset string) {
	writers := []struct {
		fence   int64
		attempt int
	}{{1, 1}, {1, 5}, {2, 1}, {2, 3}, {1, 9}, {2, 2}, {1, 3}, {2, 3}}
	const rounds = 5
	for r := range rounds {
		a := fmt.Sprintf("%s-%d", asset, r)
		var wg sync.WaitGroup
		errs := make([]error, len(writers))
		for i, w := range writers {
			wg.Go(func() {
				// Close identifies the writer; the two (2, 3) writers write
				// the same values, as two deliveries of one attempt would.
				errs[i] = s.Put(t.Context(), bar(a, w.fence, w.attempt, float64(w.fence*100+int64(w.attempt))))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, bars.ErrStale) {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		for i, w := range writers {
			if w.fence == 2 && w.attempt == 3 {
				require.NoError(t, errs[i], "the highest writer is never stale")
			}
		}
		requireBar(t, bar(a, 2, 3, 203), get(t, s, a, minute))
	}
}
