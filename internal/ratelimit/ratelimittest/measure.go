package ratelimittest

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
)

// Measurement is what Measure observed.
type Measurement struct {
	Starts   int           // starts granted within the measured span
	Span     time.Duration // the span, whole windows of the limit
	Rate     float64       // Starts per second
	Limit    float64       // the limit's starts per second
	Attempts int           // Take calls made within the span (granted or refused)
}

// Measure runs consumers callers on each of processes (one store each:
// the stores of separate processes, or handles of them) that loop taking
// starts of l for span (rounded up to whole windows, starting on a
// window's boundary) and counts the starts granted within it.
func Measure(ctx context.Context, processes []ratelimit.Store, consumers int, l ratelimit.Limit, span time.Duration) (Measurement, error) {
	per := l.Per
	windows := (span + per - 1) / per
	span = windows * per
	// Start on the next window boundary, one window ahead to let the
	// callers start.
	now := time.Now()
	start := now.Truncate(per).Add(2 * per)
	end := start.Add(span)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	var mu sync.Mutex
	var m Measurement
	var firstErr error
	var wg sync.WaitGroup
	var counted []*countingStore
	for _, s := range processes {
		counting := &countingStore{Store: s}
		counted = append(counted, counting)
		lm := &ratelimit.Limiter{Store: counting}
		for range consumers {
			wg.Go(func() {
				// Wait for the start: a caller granted earlier would count
				// against the first window.
				t := time.NewTimer(time.Until(start))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				for {
					err := lm.Wait(ctx, l)
					at := time.Now()
					if err != nil {
						if ctx.Err() == nil {
							mu.Lock()
							if firstErr == nil {
								firstErr = err
							}
							mu.Unlock()
						}
						return
					}
					if !at.Before(start) && at.Before(end) {
						mu.Lock()
						m.Starts++
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	for _, c := range counted {
		m.Attempts += c.n()
	}
	m.Span = span
	m.Rate = float64(m.Starts) / span.Seconds()
	m.Limit = float64(l.Starts) / per.Seconds()
	return m, firstErr
}

type countingStore struct {
	ratelimit.Store
	mu    sync.Mutex
	calls int
}

func (c *countingStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Store.Take(ctx, p)
}

func (c *countingStore) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}
