package batonlock

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// forEngine runs f on every engine, each with its lock store.
func forEngine(t *testing.T, f func(t *testing.T, open func(o Options) *Locker)) {
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			store := e.newStore(t)
			f(t, func(o Options) *Locker {
				l, err := newLocker(store, &o)
				require.NoError(t, err)
				return l
			})
		})
	}
}

// Bad input is a typed error, never a panic nor a silent success.
func TestBadInput(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, open func(Options) *Locker) {
		ctx := t.Context()
		c := &clock{now: t0}
		l := open(Options{TTL: time.Minute, NowFunc: c.Now, Heartbeat: -1, Holder: "app"})
		for _, key := range []string{"", strings.Repeat("k", MaxKeyBytes+1), "bad\x00key", "bad\nkey", string([]byte{0xff})} {
			require.NotPanics(t, func() {
				_, err := l.TryAcquire(ctx, key)
				require.ErrorIs(t, err, ErrInvalidKey, "key %q", key)
				_, err = l.Acquire(ctx, key)
				require.ErrorIs(t, err, ErrInvalidKey, "key %q", key)
				_, err = l.Inspect(ctx, key)
				require.ErrorIs(t, err, ErrInvalidKey, "key %q", key)
				_, err = l.ForceRelease(ctx, key, ForceRelease{Owner: "x", Fence: 1})
				require.ErrorIs(t, err, ErrInvalidKey, "key %q", key)
			})
		}
		long := strings.Repeat("é", MaxKeyBytes/2) // exactly MaxKeyBytes bytes
		k, err := l.TryAcquire(ctx, long)
		require.NoError(t, err, "a key of MaxKeyBytes bytes")
		require.NoError(t, k.Release(ctx))

		for _, ttl := range []time.Duration{0, -time.Second} {
			_, err := newLocker(l.raw, &Options{TTL: ttl})
			require.ErrorIs(t, err, ErrInvalidTTL, "TTL %s", ttl)
		}
		_, err = newLocker(l.raw, &Options{TTL: time.Second, Skew: -time.Second})
		require.ErrorIs(t, err, ErrInvalidOptions)

		key := "entry/alpha/EURUSD#" + t.Name()
		mine, err := l.TryAcquire(ctx, key)
		require.NoError(t, err)
		// A release by a non-owner: refused, and the lock stays held.
		_, err = l.ForceRelease(ctx, key, ForceRelease{Owner: "someone-else", Fence: mine.Fence()})
		require.ErrorIs(t, err, ErrNotOwner)
		_, err = l.ForceRelease(ctx, key, ForceRelease{Owner: mine.Owner(), Fence: mine.Fence() - 1})
		require.ErrorIs(t, err, ErrNotOwner)
		info, err := l.Inspect(ctx, key)
		require.NoError(t, err)
		require.True(t, info.Held)
		require.Equal(t, mine.Owner(), info.Owner)

		// A renew after loss: refused, and the Context ends with ErrLost.
		c.Add(2 * time.Minute)
		other, err := l.TryAcquire(ctx, key)
		require.NoError(t, err, "the expired holder is taken over")
		require.Greater(t, other.Fence(), mine.Fence())
		err = mine.Renew(ctx)
		require.ErrorIs(t, err, ErrLost)
		require.ErrorIs(t, context.Cause(mine.Context()), ErrLost)
		require.ErrorIs(t, mine.Renew(ctx), ErrLost, "still refused")
		// A release by the lost owner: refused, the new holder keeps it.
		require.ErrorIs(t, mine.Release(ctx), ErrNotOwner)
		info, err = l.Inspect(ctx, key)
		require.NoError(t, err)
		require.Equal(t, other.Owner(), info.Owner)
		_, err = l.Inspect(ctx, "never-"+key)
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, other.Release(ctx))
		require.ErrorIs(t, context.Cause(other.Context()), ErrReleased)
		require.ErrorIs(t, other.Release(ctx), ErrNotOwner, "a second release")
	})
}

// TryAcquire fails fast with the holder; the fence strictly increases per
// key across takeovers and releases; a forced release refuses a live
// holder unless ForceLive, and frees an expired one.
func TestAcquireFenceAndForceRelease(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, open func(Options) *Locker) {
		ctx := t.Context()
		c := &clock{now: t0}
		a := open(Options{TTL: 30 * time.Second, Skew: time.Second, NowFunc: c.Now, Heartbeat: -1, Holder: "trader-a"})
		b := open(Options{TTL: 30 * time.Second, Skew: time.Second, NowFunc: c.Now, Heartbeat: -1, Holder: "trader-b"})
		key := "entry/" + t.Name()
		ka, err := a.TryAcquire(ctx, key)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(ka.Owner(), "trader-a#"))
		_, err = b.TryAcquire(ctx, key)
		var held *HeldError
		require.ErrorAs(t, err, &held)
		require.ErrorIs(t, err, ErrHeld)
		require.Equal(t, ka.Owner(), held.Holder.Owner)
		require.Equal(t, "trader-a", held.Holder.Holder)
		require.Equal(t, ka.Fence(), held.Holder.Fence)
		require.EqualValues(t, 1, held.Holder.Contention, "the refusal is counted")

		_, err = b.ForceRelease(ctx, key, ForceRelease{Owner: ka.Owner(), Fence: ka.Fence()})
		require.ErrorIs(t, err, ErrLive, "never force-release a live owner")
		c.Add(30 * time.Second) // expired, but within the skew allowance
		_, err = b.ForceRelease(ctx, key, ForceRelease{Owner: ka.Owner(), Fence: ka.Fence()})
		require.ErrorIs(t, err, ErrLive, "within the skew allowance")
		got, err := b.ForceRelease(ctx, key, ForceRelease{Owner: ka.Owner(), Fence: ka.Fence(), ForceLive: true, By: "op", Reason: "test"})
		require.NoError(t, err, "ForceLive overrides")
		require.True(t, got.Held)
		require.ErrorIs(t, ka.Renew(ctx), ErrLost)

		fences := []int64{ka.Fence()}
		for i := range 3 {
			k, err := b.TryAcquire(ctx, key)
			require.NoError(t, err, "round %d", i)
			fences = append(fences, k.Fence())
			if i%2 == 0 {
				require.NoError(t, k.Release(ctx))
			} else {
				c.Add(time.Minute) // expired: the next one takes over
				_, err := b.ForceRelease(ctx, key, ForceRelease{Owner: k.Owner(), Fence: k.Fence()})
				require.NoError(t, err, "an expired holder is released without ForceLive")
			}
		}
		for i := 1; i < len(fences); i++ {
			require.Greater(t, fences[i], fences[i-1], "fences %v", fences)
		}
	})
}

// A key whose acquirers are refused by one holder for three TTL cycles is
// escalated (Inspect, List, the metric); a new holder starts over.
func TestEscalation(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, open func(Options) *Locker) {
		ctx := t.Context()
		c := &clock{now: t0}
		var mu sync.Mutex
		var metrics []Metric
		const ttl = 30 * time.Second
		holder := open(Options{TTL: ttl, NowFunc: c.Now, Heartbeat: -1, Holder: "stuck"})
		waiter := open(Options{TTL: ttl, NowFunc: c.Now, Heartbeat: -1, Holder: "waiter", MetricFunc: func(m Metric) {
			mu.Lock()
			defer mu.Unlock()
			metrics = append(metrics, m)
		}})
		key := "entry/" + t.Name()
		k, err := holder.TryAcquire(ctx, key)
		require.NoError(t, err)
		escalated := func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range metrics {
				if m.Name == MetricEscalated && m.Key == key {
					return true
				}
			}
			return false
		}
		for i := 0; ; i++ {
			require.NoError(t, k.Renew(ctx))
			_, err := waiter.TryAcquire(ctx, key)
			var held *HeldError
			require.ErrorAs(t, err, &held)
			elapsed := c.Now().Sub(t0)
			require.Equal(t, elapsed >= 3*ttl, held.Holder.Escalated, "after %s", elapsed)
			require.Equal(t, elapsed >= 3*ttl, escalated(), "metric after %s", elapsed)
			if elapsed >= 3*ttl {
				break
			}
			c.Add(10 * time.Second)
		}
		info, err := waiter.Inspect(ctx, key)
		require.NoError(t, err)
		require.True(t, info.Escalated)
		require.Equal(t, 3*ttl, info.Streak)
		require.EqualValues(t, 10, info.Contention)
		if list, err := waiter.List(ctx); err == nil {
			require.Len(t, list, 1)
			require.True(t, list[0].Escalated)
		} else {
			require.ErrorIs(t, err, ErrUnsupported)
		}
		c.Add(ttl + time.Nanosecond)
		info, err = waiter.Inspect(ctx, key)
		require.NoError(t, err)
		require.False(t, info.Escalated, "refusals stopped a TTL ago")

		// The holder gives up; another takes the key: its refusals start a
		// new streak.
		require.NoError(t, k.Release(ctx))
		_, err = waiter.TryAcquire(ctx, key)
		require.NoError(t, err)
		_, err = holder.TryAcquire(ctx, key)
		var held *HeldError
		require.ErrorAs(t, err, &held)
		require.False(t, held.Holder.Escalated)
		require.Zero(t, held.Holder.Streak)
	})
}

// The Context ends when the lock is lost at its expiry with no renewal,
// and the heartbeat keeps a lock held past its TTL.
func TestContextAndHeartbeat(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, open func(Options) *Locker) {
		ctx := t.Context()
		noBeat := open(Options{TTL: 300 * time.Millisecond, Heartbeat: -1, Holder: "no-beat"})
		k, err := noBeat.TryAcquire(ctx, "hb/"+t.Name())
		require.NoError(t, err)
		select {
		case <-k.Context().Done():
			require.ErrorIs(t, context.Cause(k.Context()), ErrLost)
		case <-time.After(10 * time.Second):
			t.Fatal("the context outlived the lock's expiry")
		}

		beat := open(Options{TTL: 600 * time.Millisecond, Holder: "beat"})
		k, err = beat.TryAcquire(ctx, "beat/"+t.Name())
		require.NoError(t, err)
		first := k.ExpiresAt()
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, k.Context().Err(), "renewed by the heartbeat: %v", context.Cause(k.Context()))
		require.True(t, k.ExpiresAt().After(first))
		require.NoError(t, k.Release(ctx))
		require.ErrorIs(t, context.Cause(k.Context()), ErrReleased)
	})
}

// Acquire waits for the holder's release, and never past its expiry.
func TestAcquireWaits(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, open func(Options) *Locker) {
		ctx := t.Context()
		l := open(Options{TTL: time.Second, Heartbeat: -1, Holder: "w"})
		key := "wait/" + t.Name()
		held, err := l.TryAcquire(ctx, key)
		require.NoError(t, err)
		start := time.Now()
		got, err := l.Acquire(ctx, key) // the holder never releases: its expiry frees it
		require.NoError(t, err)
		require.Greater(t, got.Fence(), held.Fence())
		require.Less(t, time.Since(start), 5*time.Second, "waited past the holder's expiry")

		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(short, key)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.True(t, errors.Is(err, ErrHeld), "%v", err)
	})
}

// Open takes its engine from the one registry every entry point uses: an
// unknown name is invalid options listing the linked engines, a URL names
// one, and an engine's missing setting is invalid options too.
func TestOpenEngines(t *testing.T) {
	_, err := Open(t.Context(), &Options{Engine: "oracle", TTL: time.Second})
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.ErrorContains(t, err, `unknown engine "oracle" (engines: aws, postgres, sqlite;`)

	path := filepath.Join(t.TempDir(), "locks.db")
	l, err := Open(t.Context(), &Options{Engine: "sqlite://" + filepath.ToSlash(path), TTL: time.Second})
	require.NoError(t, err)
	k, err := l.TryAcquire(t.Context(), "k")
	require.NoError(t, err)
	require.NoError(t, k.Release(t.Context()))
	require.NoError(t, l.Close())
	require.FileExists(t, path)

	t.Setenv("BATON_TABLE", "")
	_, err = Open(t.Context(), &Options{Engine: "aws", TTL: time.Second})
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.ErrorContains(t, err, "aws: no table")
}
