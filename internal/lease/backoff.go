package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is how a caller that wants a lease held by another waits between
// attempts: "full jitter" exponential backoff. After the n-th refusal it
// waits a uniform random time in [0, min(Cap, Base·2^n)], and never past
// the holder's expiry plus the skew allowance (the lease is free then).
// Contenders spread out instead of retrying in lockstep, so a lease fought
// over by many costs few calls per acquisition.
type Backoff struct {
	Base time.Duration // the first wait's bound; 0 means 10ms
	Cap  time.Duration // the largest bound; 0 means 1s
	// NowFunc is the clock of each attempt's Now; nil: time.Now.
	NowFunc func() time.Time
	// SleepFunc waits d or until ctx ends; nil: a timer.
	SleepFunc func(ctx context.Context, d time.Duration) error
	// RandFunc returns a uniform value in [0, n]; nil: math/rand/v2.
	RandFunc func(n time.Duration) time.Duration
}

// AcquireWithBackoff acquires p's lease on s, retrying while another owner
// holds it, with b's waits, until ctx ends (its error is returned, with
// the last refusal's HeldError joined). p.Now is taken from b's clock at
// every attempt. It returns the lease and the Acquire calls it made.
func AcquireWithBackoff(ctx context.Context, s Store, p AcquireParams, b Backoff) (Lease, int, error) {
	base, ceiling := b.Base, b.Cap
	if base <= 0 {
		base = 10 * time.Millisecond
	}
	if ceiling <= 0 {
		ceiling = time.Second
	}
	now, sleep, random := b.NowFunc, b.SleepFunc, b.RandFunc
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	if random == nil {
		random = func(n time.Duration) time.Duration { return rand.N(n + 1) }
	}
	bound := base
	for calls := 1; ; calls++ {
		p.Now = now()
		l, err := s.Acquire(ctx, p)
		var held *HeldError
		if !errors.As(err, &held) {
			return l, calls, err
		}
		wait := random(bound)
		if free := held.Holder.ExpiresAt.Add(p.Skew).Sub(p.Now); free > 0 && wait > free {
			wait = free
		}
		if serr := sleep(ctx, wait); serr != nil {
			return Lease{}, calls, errors.Join(serr, err)
		}
		bound = min(2*bound, ceiling)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
