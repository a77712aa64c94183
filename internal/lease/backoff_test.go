package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// heldStore refuses the first n acquisitions, held until expires.
type heldStore struct {
	lease.Store
	n       int
	calls   int
	expires time.Time
}

func (s *heldStore) Acquire(_ context.Context, p lease.AcquireParams) (lease.Lease, error) {
	s.calls++
	if s.calls <= s.n {
		return lease.Lease{}, &lease.HeldError{Holder: lease.Lease{Job: p.Job, Owner: "other", ExpiresAt: s.expires, Fence: 1}}
	}
	return lease.Lease{Job: p.Job, Owner: p.Owner, Fence: 2, ExpiresAt: p.Now.Add(p.TTL)}, nil
}

func TestAcquireWithBackoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s := &heldStore{n: 5, expires: now.Add(time.Hour)}
	var waits, bounds []time.Duration
	b := lease.Backoff{
		Base: 10 * time.Millisecond, Cap: 700 * time.Millisecond,
		NowFunc:   func() time.Time { return now },
		SleepFunc: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		RandFunc:  func(n time.Duration) time.Duration { bounds = append(bounds, n); return n / 2 },
	}
	l, calls, err := lease.AcquireWithBackoff(context.Background(), s, lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}, b)
	require.NoError(t, err)
	require.Equal(t, "me", l.Owner)
	require.Equal(t, 6, calls)
	require.Equal(t, []time.Duration{10, 80, 640, 700, 700}, scale(bounds, time.Millisecond), "the bound grows eightfold to the cap")
	require.Equal(t, []time.Duration{5, 40, 320, 350, 350}, scale(waits, time.Millisecond), "the wait is drawn within it")

	// Never past the holder's expiry.
	s = &heldStore{n: 1, expires: now.Add(3 * time.Millisecond)}
	waits, bounds = nil, nil
	b.RandFunc = func(n time.Duration) time.Duration { return n }
	_, _, err = lease.AcquireWithBackoff(context.Background(), s, lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}, b)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{3 * time.Millisecond}, waits)

	// ctx's end stops it, with the last refusal.
	s = &heldStore{n: 100, expires: now.Add(time.Hour)}
	b.SleepFunc = func(context.Context, time.Duration) error { return context.Canceled }
	_, calls, err = lease.AcquireWithBackoff(context.Background(), s, lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}, b)
	require.ErrorIs(t, err, context.Canceled)
	var held *lease.HeldError
	require.True(t, errors.As(err, &held))
	require.Equal(t, 1, calls)
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

// A Contender starts each acquisition from the bound its earlier ones
// left, halved for every ten seconds without a refusal, down to Base.
func TestContenderRemembersItsBound(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var bounds []time.Duration
	c := &lease.Contender{Backoff: lease.Backoff{
		Base: 10 * time.Millisecond, Cap: time.Second,
		NowFunc:   func() time.Time { return now },
		SleepFunc: func(context.Context, time.Duration) error { return nil },
		RandFunc:  func(n time.Duration) time.Duration { bounds = append(bounds, n); return 0 },
	}}
	p := lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}
	_, calls, err := c.Acquire(t.Context(), &heldStore{n: 2, expires: now.Add(time.Hour)}, p)
	require.NoError(t, err)
	require.Equal(t, 3, calls)
	require.Equal(t, []time.Duration{10, 80}, scale(bounds, time.Millisecond))

	bounds = nil
	_, calls, err = c.Acquire(t.Context(), &heldStore{n: 2, expires: now.Add(time.Hour)}, p)
	require.NoError(t, err)
	require.Equal(t, 3, calls)
	require.Equal(t, []time.Duration{640, 1000}, scale(bounds, time.Millisecond), "the next acquisition starts where the last one left the bound, up to the cap")

	_, calls, err = c.Acquire(t.Context(), &heldStore{}, p)
	require.NoError(t, err)
	require.Equal(t, 1, calls, "a free lease at once, whatever the bound")

	for _, tc := range []struct {
		quiet time.Duration
		want  time.Duration
	}{{9 * time.Second, 1000}, {25 * time.Second, 250}, {10 * time.Minute, 10}} {
		now = now.Add(tc.quiet)
		bounds = nil
		_, _, err = c.Acquire(t.Context(), &heldStore{n: 1, expires: now.Add(time.Hour)}, p)
		require.NoError(t, err)
		require.Equal(t, []time.Duration{tc.want}, scale(bounds, time.Millisecond), "after %s without a refusal", tc.quiet)
	}

	// AcquireWithBackoff remembers nothing.
	bounds = nil
	_, _, err = lease.AcquireWithBackoff(t.Context(), &heldStore{n: 1, expires: now.Add(time.Hour)}, p, c.Backoff)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{10}, scale(bounds, time.Millisecond))
}

// movingStore refuses the first n acquisitions, each by a holder whose
// fence is the previous one's plus step (0: the same holder throughout).
type movingStore struct {
	lease.Store
	n, calls    int
	fence, step int64
	expires     time.Time
}

func (s *movingStore) Acquire(_ context.Context, p lease.AcquireParams) (lease.Lease, error) {
	s.calls++
	if s.calls <= s.n {
		s.fence += s.step
		return lease.Lease{}, &lease.HeldError{Holder: lease.Lease{Job: p.Job, Owner: "other", ExpiresAt: s.expires, Fence: s.fence}}
	}
	return lease.Lease{Job: p.Job, Owner: p.Owner, Fence: s.fence + 1, ExpiresAt: p.Now.Add(p.TTL)}, nil
}

// While one holder keeps the lease the bound stays within Cap; once the
// fence moves between two refusals (the lease is taken as soon as it is
// free, without this caller) it starts at Cap at least and may grow to
// BusyCap, and it comes back within Cap when a refusal shows the same
// holder again.
func TestContenderBusyLease(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var bounds []time.Duration
	c := &lease.Contender{Backoff: lease.Backoff{
		Base: 10 * time.Millisecond, Cap: time.Second, BusyCap: 8 * time.Second,
		NowFunc:   func() time.Time { return now },
		SleepFunc: func(context.Context, time.Duration) error { return nil },
		RandFunc:  func(n time.Duration) time.Duration { bounds = append(bounds, n); return 0 },
	}}
	p := lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}
	s := &movingStore{n: 6, fence: 10, step: 3, expires: now.Add(time.Hour)}
	_, calls, err := c.Acquire(t.Context(), s, p)
	require.NoError(t, err)
	require.Equal(t, 7, calls)
	require.Equal(t, []time.Duration{10, 1000, 8000, 8000, 8000, 8000}, scale(bounds, time.Millisecond),
		"the first refusal knows no earlier fence (Cap); from the second on the lease is seen changing hands: from Cap up to BusyCap")

	bounds = nil
	_, _, err = c.Acquire(t.Context(), &movingStore{n: 2, fence: 100, expires: now.Add(time.Hour)}, p)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{8000, 1000}, scale(bounds, time.Millisecond),
		"the first refusal moved the fence (28 → 100); the second saw the same holder: back within Cap")

	// With the defaults BusyCap is 8×Cap, and never below Cap.
	bounds = nil
	d := &lease.Contender{Backoff: lease.Backoff{Cap: 2 * time.Second, NowFunc: c.Backoff.NowFunc, SleepFunc: c.Backoff.SleepFunc, RandFunc: c.Backoff.RandFunc}}
	_, _, err = d.Acquire(t.Context(), &movingStore{n: 6, step: 1, expires: now.Add(time.Hour)}, p)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{10, 2000, 16000, 16000, 16000, 16000}, scale(bounds, time.Millisecond))
	bounds = nil
	d = &lease.Contender{Backoff: lease.Backoff{Cap: 2 * time.Second, BusyCap: time.Second, NowFunc: c.Backoff.NowFunc, SleepFunc: c.Backoff.SleepFunc, RandFunc: c.Backoff.RandFunc}}
	_, _, err = d.Acquire(t.Context(), &movingStore{n: 5, step: 1, expires: now.Add(time.Hour)}, p)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{10, 2000, 2000, 2000, 2000}, scale(bounds, time.Millisecond))
}

// An Acquire that gives up while it waits leaves the rest of its wait to
// the next Acquire of the same job, which waits it out before its first
// call; another job's Acquire calls at once.
func TestContenderWaitsOutAnEarlierWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var waits []time.Duration
	giveUp := true
	c := &lease.Contender{Backoff: lease.Backoff{
		Base:    100 * time.Millisecond,
		NowFunc: func() time.Time { return now },
		SleepFunc: func(_ context.Context, d time.Duration) error {
			waits = append(waits, d)
			if giveUp {
				return context.DeadlineExceeded
			}
			now = now.Add(d)
			return nil
		},
		RandFunc: func(n time.Duration) time.Duration { return n },
	}}
	p := lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}
	s := &movingStore{n: 1, fence: 4, expires: now.Add(time.Hour)}
	_, calls, err := c.Acquire(t.Context(), s, p)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, lease.ErrHeld)
	require.Equal(t, 1, calls)
	require.Equal(t, []time.Duration{100 * time.Millisecond}, waits)

	// 30ms later it is asked again, and gives up again before the rest of
	// the wait is over: no call, the refusal it remembers joined.
	now = now.Add(30 * time.Millisecond)
	waits = nil
	_, calls, err = c.Acquire(t.Context(), s, p)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, lease.ErrHeld)
	require.Equal(t, 0, calls)
	require.Equal(t, 1, s.calls)
	require.Equal(t, []time.Duration{70 * time.Millisecond}, waits)

	// This time it waits the rest out, then takes the (now free) lease.
	giveUp = false
	waits = nil
	_, calls, err = c.Acquire(t.Context(), s, p)
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Equal(t, []time.Duration{70 * time.Millisecond}, waits)

	// Once the wait is over, or for another job, the first call is at once.
	waits = nil
	_, calls, err = c.Acquire(t.Context(), &movingStore{}, p)
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Empty(t, waits)
	giveUp = true
	_, _, err = c.Acquire(t.Context(), &movingStore{n: 1, expires: now.Add(time.Hour)}, p)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	waits = nil
	_, calls, err = c.Acquire(t.Context(), &movingStore{}, lease.AcquireParams{Job: "k", Owner: "me", TTL: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Empty(t, waits)
}

// The bound decays with the time after the latest wait ended, not the
// time spent waiting.
func TestContenderWaitingIsNotQuiet(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var bounds []time.Duration
	c := &lease.Contender{Backoff: lease.Backoff{
		Base: 10 * time.Millisecond, Cap: time.Second, BusyCap: 32 * time.Second,
		NowFunc:   func() time.Time { return now },
		SleepFunc: func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil },
		RandFunc:  func(n time.Duration) time.Duration { bounds = append(bounds, n); return n },
	}}
	p := lease.AcquireParams{Job: "j", Owner: "me", TTL: time.Minute}
	s := &movingStore{n: 6, step: 1, expires: now.Add(time.Hour)}
	_, _, err := c.Acquire(t.Context(), s, p)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{10, 1000, 8000, 32000, 32000, 32000}, scale(bounds, time.Millisecond))

	// The last wait was 32 s; 5 s after it ended the bound is still whole,
	// 25 s after it ended it is a quarter.
	for _, tc := range []struct {
		quiet time.Duration
		want  time.Duration
	}{{5 * time.Second, 32000}, {25 * time.Second, 8000}} {
		bounds = nil
		now = now.Add(tc.quiet)
		s = &movingStore{n: 1, fence: s.fence + 1, step: 1, expires: now.Add(time.Hour)}
		_, _, err = c.Acquire(t.Context(), s, p)
		require.NoError(t, err)
		require.Equal(t, []time.Duration{tc.want}, scale(bounds, time.Millisecond), "%s after the wait", tc.quiet)
	}
}
