package bench

import (
	"context"
	"fmt"
	"strconv"
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

// runTimeJob is a job whose n items (it-0000000, it-0000001, …) are
// computed when its run opens, by an items function that serves pages of
// 1,000 names and holds none, with ExpectedItems n declared; otherwise as
// syntheticJob. No process holds its list whole: the coordinator stores
// and sends it a page at a time, the consumers read the pages they need.
func runTimeJob(name string, n int, concurrency int, p baton.Processor) baton.Job {
	j := syntheticJob(name, 1, concurrency, p)
	j.Assets = nil
	j.ExpectedItems = n
	j.Items = func(_ context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		from := 0
		if req.Cursor != "" {
			var err error
			if from, err = strconv.Atoi(req.Cursor); err != nil {
				return baton.ItemsPage{}, fmt.Errorf("bad cursor %q", req.Cursor)
			}
		}
		to := min(from+1000, n)
		page := baton.ItemsPage{Items: make([]baton.Item, 0, max(to-from, 0))}
		for i := from; i < to; i++ {
			page.Items = append(page.Items, baton.Item{Name: fmt.Sprintf("it-%07d", i)})
		}
		if to < n {
			page.Next = strconv.Itoa(to)
		}
		return page, nil
	}
	return j
}
