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
