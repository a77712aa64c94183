package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff is how a caller that wants a lease held by another waits between
// attempts: exponential backoff with jitter. Each refusal multiplies the
// bound by eight (up to Cap), and the wait is drawn uniformly in
// [0, bound] ("full jitter"), never past the holder's expiry plus the
// skew allowance (the lease is free then). A lease that turns over fast is
// fought over by every contender, and each refused call takes a share of
// the server that the holder's release and the next acquisition need: a
// steep growth gets the losers out of the way within two or three calls
// (doubling took about six). Contenders spread out instead of retrying in
// lockstep, so a lease fought over by many costs few calls per
// acquisition; a Contender also remembers the bound between acquisitions
// (see BENCHMARKS.md).
type Backoff struct {
	Base time.Duration // the first wait's bound; 0 means 10ms
	Cap  time.Duration // the largest bound; 0 means 4s
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
// every attempt. It returns the lease and the Acquire calls it made. It is
// a Contender's Acquire with nothing remembered from earlier calls.
func AcquireWithBackoff(ctx context.Context, s Store, p AcquireParams, b Backoff) (Lease, int, error) {
	return (&Contender{Backoff: b}).Acquire(ctx, s, p)
}

// Contender is a caller that wants the same lease again and again (a warm
// process retrying each invocation, an operator's loop): it keeps the
// backoff's bound from one acquisition to the next, so that a contender
// that had to wait does not start again from Base at every acquisition,
// spending the short waits of a first refusal on a lease that is still
// fought over. The bound halves for every ten seconds without a refusal,
// so that it shrinks back once the contention is over (and never exceeds
// Cap). Safe for concurrent use; the zero value uses Backoff's defaults.
type Contender struct {
	Backoff Backoff

	mu      sync.Mutex
	bound   time.Duration // 0: Base
	refused time.Time     // the latest refusal
}

// decayEvery is how long a Contender goes without a refusal for its bound
// to halve.
const decayEvery = 10 * time.Second

// Acquire acquires p's lease on s as AcquireWithBackoff does, starting from
// the bound the contender's earlier acquisitions left.
func (c *Contender) Acquire(ctx context.Context, s Store, p AcquireParams) (Lease, int, error) {
	b := c.Backoff
	base, ceiling := b.Base, b.Cap
	if base <= 0 {
		base = 10 * time.Millisecond
	}
	if ceiling <= 0 {
		ceiling = 4 * time.Second
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
	c.mu.Lock()
	bound := c.bound
	if quiet := now().Sub(c.refused); !c.refused.IsZero() && quiet >= decayEvery {
		bound >>= min(int(quiet/decayEvery), 32)
	}
	bound = min(max(bound, base), ceiling)
	c.mu.Unlock()
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
		bound = min(8*bound, ceiling)
		c.remember(bound, p.Now)
		if serr := sleep(ctx, wait); serr != nil {
			return Lease{}, calls, errors.Join(serr, err)
		}
	}
}

func (c *Contender) remember(bound time.Duration, refused time.Time) {
	c.mu.Lock()
	c.bound, c.refused = bound, refused
	c.mu.Unlock()
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
