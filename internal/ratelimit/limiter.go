package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Limit is a named limit: Starts starts per Per, split over Shards
// counter records (see the package doc; 0 means 1).
type Limit struct {
	Name   string
	Starts int
	Per    time.Duration
	Shards int
}

// Check reports what is wrong with l.
func (l Limit) Check() error {
	switch {
	case l.Name == "":
		return errors.New("rate limit: no name")
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
