package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
)

// syntheticJob is a job of n assets (A00000, A00001, …) and no derived
// items, scheduled every minute, processed by p.
func syntheticJob(name string, n int, concurrency int, p baton.Processor) baton.Job {
	assets := make([]string, n)
	for i := range assets {
		assets[i] = fmt.Sprintf("A%05d", i)
	}
	return baton.Job{
		Name:     name,
		Schedule: "rate(1 minute)",
		Assets:   assets,
		Limits: baton.Limits{
			LeaseTTL:       2 * time.Minute,
			ClockSkew:      time.Second,
			ItemLease:      time.Minute,
			MaxAttempts:    5,
			Concurrency:    concurrency,
			DeadlineMargin: 2 * time.Second,
		},
		Processor: p,
	}
}

// sleeper is a processor that waits its latency (0: none) and counts the
// calls.
type sleeper struct {
	latency time.Duration
	calls   atomic.Int64
}

func (s *sleeper) Process(ctx context.Context, _ baton.Task) ([]byte, error) {
	s.calls.Add(1)
	if s.latency <= 0 {
		return nil, nil
	}
	t := time.NewTimer(s.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
