package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Limit is a named limit: Starts starts per Per, split over Shards
// counter records (see the package doc; 0 means 1); or, with InFlight,
// InFlight holders at a time (Starts, Per and Shards zero).
type Limit struct {
	Name     string
	Starts   int
	Per      time.Duration
	Shards   int
	InFlight int
}

// SlotPoll is how long Acquire waits, on average, before it tries the
// slots of a full in-flight limit again.
const SlotPoll = 200 * time.Millisecond

// Check reports what is wrong with l: the one check of a limit's
// numbers, which baton.Job.Validate makes too.
func (l Limit) Check() error {
	switch {
	case l.Name == "":
		return errors.New("rate limit: no name")
	case l.InFlight < 0:
		return fmt.Errorf("rate limit %s: InFlight must not be negative", l.Name)
	case l.InFlight > 0 && (l.Starts != 0 || l.Per != 0 || l.Shards != 0):
		return fmt.Errorf("rate limit %s: InFlight excludes Starts, Per and Shards (a limit is one or the other)", l.Name)
	case l.InFlight > 0:
		return nil
	case l.Starts < 1:
		return fmt.Errorf("rate limit %s: Starts must be at least 1", l.Name)
	case l.Per < time.Millisecond:
		return fmt.Errorf("rate limit %s: Per must be at least 1ms", l.Name)
	case l.Shards < 0 || l.Shards > l.Starts:
		return fmt.Errorf("rate limit %s: Shards must be within 0..Starts (%d)", l.Name, l.Starts)
	}
	return nil
}

// shardMax is the maximum of shard s of l: Starts/Shards, the remainder
// spread over the first shards.
func (l Limit) shardMax(s int) int {
	n := max(l.Shards, 1)
	m := l.Starts / n
	if s < l.Starts%n {
		m++
	}
	return m
}

// Limiter grants starts of named limits from a Store.
type Limiter struct {
	Store   Store
	NowFunc func() time.Time // nil: time.Now
	// SleepFunc waits for d or until ctx ends; nil: a timer.
	SleepFunc func(ctx context.Context, d time.Duration) error
}

func (lm *Limiter) now() time.Time {
	if lm.NowFunc != nil {
		return lm.NowFunc()
	}
	return time.Now()
}

func (lm *Limiter) sleep(ctx context.Context, d time.Duration) error {
	if lm.SleepFunc != nil {
		return lm.SleepFunc(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// TryTake takes one start of l in the window of now, trying every shard
// from a random one; ok is false when the window is full, with the start
// of the next window.
func (lm *Limiter) TryTake(ctx context.Context, l Limit, now time.Time) (ok bool, next time.Time, err error) {
	per := int64(l.Per)
	w := now.UnixNano() / per
	next = time.Unix(0, (w+1)*per)
	shards := max(l.Shards, 1)
	first := rand.IntN(shards)
	for i := range shards {
		s := (first + i) % shards
		_, err := lm.Store.Take(ctx, TakeParams{Name: l.Name, Window: w, Shard: s, Max: l.shardMax(s), Expires: next.Add(l.Per)})
		if err == nil {
			return true, next, nil
		}
		if !errors.Is(err, ErrFull) {
			return false, next, fmt.Errorf("rate limit %s: %w", l.Name, err)
		}
	}
	return false, next, nil
}

// Wait blocks until it takes one start of l, or ctx ends. A full window
// waits for the next one, plus a random spread of a tenth of the
// interval at most, so that waiting callers do not all write at once.
func (lm *Limiter) Wait(ctx context.Context, l Limit) error {
	for {
		now := lm.now()
		ok, next, err := lm.TryTake(ctx, l, now)
		if err != nil || ok {
			return err
		}
		// From the time the refusal came back: a slow store must not make
		// the caller miss the next window.
		spread := time.Duration(rand.Int64N(int64(l.Per)/10 + 1))
		if err := lm.sleep(ctx, max(0, next.Sub(lm.now()))+spread); err != nil {
			return fmt.Errorf("rate limit %s: %w", l.Name, err)
		}
	}
}

// TryAcquire takes a slot of l, an in-flight limit, for holder until
// until, trying every slot once from a random one; ok is false when every
// slot is held by someone else.
func (lm *Limiter) TryAcquire(ctx context.Context, l Limit, holder string, until time.Time) (slot int, ok bool, err error) {
	if l.InFlight < 1 {
		return 0, false, fmt.Errorf("rate limit %s: not an in-flight limit", l.Name)
	}
	now := lm.now()
	first := rand.IntN(l.InFlight)
	for i := range l.InFlight {
		s := (first + i) % l.InFlight
		err := lm.Store.Hold(ctx, SlotParams{Name: l.Name, Slot: s, Holder: holder, Until: until, Now: now})
		if err == nil {
			return s, true, nil
		}
		if !errors.Is(err, ErrFull) {
			return 0, false, fmt.Errorf("rate limit %s: %w", l.Name, err)
		}
	}
	return 0, false, nil
}

// Acquire blocks until it takes a slot of l for holder (TryAcquire),
// trying again after SlotPoll (spread by half of it either way) while
// every slot is held, or until ctx ends. until returns the hold's end at
// each try: the holder's lease as it stands.
func (lm *Limiter) Acquire(ctx context.Context, l Limit, holder string, until func() time.Time) (int, error) {
	for {
		slot, ok, err := lm.TryAcquire(ctx, l, holder, until())
		if err != nil || ok {
			return slot, err
		}
		wait := SlotPoll/2 + time.Duration(rand.Int64N(int64(SlotPoll)+1))
		if err := lm.sleep(ctx, wait); err != nil {
			return 0, fmt.Errorf("rate limit %s: %w", l.Name, err)
		}
	}
}
