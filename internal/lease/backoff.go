package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff is how a caller that wants a lease held by another waits between
// attempts: exponential backoff with full jitter, steered by the record
// each refusal returns.
//
// Each refusal multiplies the bound by eight and the wait is drawn
// uniformly in [0, bound], never past the holder's expiry plus the skew
// allowance (the lease is free then). A lease that turns over fast is
// fought over by every contender, and each refused call takes a share of
// the server that the holder's release and the next acquisition need: a
// steep growth gets the losers out of the way within two or three calls.
//
// How far the bound may grow depends on what the refusal shows. While the
// holder's fence is the one the previous refusal saw, one holder keeps the
// lease and nobody else is taking it: when it is released early, the
// contenders' next attempts are what ends the lease's idle time, so the
// bound stays within Cap. Once the fence has moved between two refusals,
// the lease is being acquired as soon as it is free without this caller's
// attempts, which only add load (and, when they win, turn the holder that
// just released it into one more contender): the bound is at least Cap
// and may grow to BusyCap. N contenders of a busy lease then make about
// N/(BusyCap/2) attempts a second between them (64 with the defaults:
// about 4), a small share of any server (see BENCHMARKS.md, scenario 2).
type Backoff struct {
	Base time.Duration // the first wait's bound; 0 means 10ms
	Cap  time.Duration // the largest bound while one holder keeps the lease; 0 means 4s
	// BusyCap is the largest bound once the lease has changed hands between
	// two refusals; 0 means 8×Cap. It is never below Cap.
	BusyCap time.Duration
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
// process retrying each invocation, an operator's loop): it keeps its
// backoff from one acquisition to the next, so that a contender that had
// to wait does not start again from Base at every acquisition, spending
// the short waits of a first refusal on a lease that is still fought
// over. It keeps:
//
//   - the bound, halved for every ten seconds it went without a refusal
//     after its latest wait ended (waiting is not quiet), so that it
//     shrinks back once the contention is over;
//   - the fence of its latest refusal, to tell a lease that changed hands
//     since (BusyCap) from one that did not (Cap);
//   - the end of the wait its latest refusal drew: an Acquire called
//     before then (the previous one gave up when its ctx ended) waits out
//     the rest before its first attempt, so that contenders that are
//     stopped and started again together do not all call at once.
//
// Safe for concurrent use; the zero value uses Backoff's defaults.
type Contender struct {
	Backoff Backoff

	mu      sync.Mutex
	job     string        // the job of the latest refusal
	bound   time.Duration // 0: Base
	refused time.Time     // the latest refusal
	fence   int64         // the holder's fence at the latest refusal
	until   time.Time     // the end of the latest refusal's wait (not reset with the job: the decay's start)
	held    *HeldError    // the latest refusal
}

// decayEvery is how long a Contender goes without a refusal for its bound
// to halve.
const decayEvery = 10 * time.Second

// Acquire acquires p's lease on s as AcquireWithBackoff does, starting from
// the bound the contender's earlier acquisitions left, after the rest of
// the wait an earlier Acquire of the same job gave up (the calls it
// returns count the attempts of this call alone).
func (c *Contender) Acquire(ctx context.Context, s Store, p AcquireParams) (Lease, int, error) {
	b := c.Backoff
	base, ceiling, busy := b.Base, b.Cap, b.BusyCap
	if base <= 0 {
		base = 10 * time.Millisecond
	}
	if ceiling <= 0 {
		ceiling = 4 * time.Second
	}
	if busy <= 0 {
		busy = 8 * ceiling
	}
	busy = max(busy, ceiling)
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
	start := now()
	if c.job != p.Job {
		c.job, c.fence, c.held = p.Job, 0, nil
	}
	bound, fence, held := c.bound, c.fence, c.held
	if quiet := start.Sub(c.until); !c.refused.IsZero() && quiet >= decayEvery {
		bound >>= min(int(quiet/decayEvery), 32)
	}
	bound = min(max(bound, base), busy)
	rest := c.until.Sub(start)
	if held == nil {
		rest = 0 // another job's wait
	}
	c.mu.Unlock()
	if rest > 0 {
		if err := sleep(ctx, rest); err != nil {
			if held != nil {
				err = errors.Join(err, held)
			}
			return Lease{}, 0, err
		}
	}
	for calls := 1; ; calls++ {
		p.Now = now()
		l, err := s.Acquire(ctx, p)
		if !errors.As(err, &held) {
			return l, calls, err
		}
		limit := ceiling
		if fence != 0 && held.Holder.Fence != fence {
			// Taken since the previous refusal: waits shorter than Cap
			// would only find it taken again.
			limit, bound = busy, max(bound, ceiling)
		}
		fence = held.Holder.Fence
		bound = min(bound, limit)
		wait := random(bound)
		if free := held.Holder.ExpiresAt.Add(p.Skew).Sub(p.Now); free > 0 && wait > free {
			wait = free
		}
		bound = min(8*bound, limit)
		c.remember(p.Job, bound, p.Now, fence, p.Now.Add(wait), held)
		if serr := sleep(ctx, wait); serr != nil {
			return Lease{}, calls, errors.Join(serr, err)
		}
	}
}

func (c *Contender) remember(job string, bound time.Duration, refused time.Time, fence int64, until time.Time, held *HeldError) {
	c.mu.Lock()
	c.job, c.bound, c.refused, c.fence, c.until, c.held = job, bound, refused, fence, until, held
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
