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
