package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ratelimit"
)

// ErrNoRateLimits matches the error of a limit taken on a consumer
// without a rate limit store.
var ErrNoRateLimits = errors.New("no rate limit store")

// taskLimiter is a task's baton.Limiter: the limits of its job, taken
// from the consumer's store.
type taskLimiter struct {
	store ratelimit.Store
	job   baton.Job
	now   func() time.Time
}

func (l taskLimiter) Wait(ctx context.Context, name string) error {
	r, ok := l.job.RateLimit(name)
	if !ok {
		return fmt.Errorf("job %s declares no rate limit %q", l.job.Name, name)
	}
	if l.store == nil {
		return fmt.Errorf("rate limit %s: %w", name, ErrNoRateLimits)
	}
	lm := ratelimit.Limiter{Store: l.store, NowFunc: l.now}
	return lm.Wait(ctx, ratelimit.Limit{Name: r.Name, Starts: r.Starts, Per: r.Per, Shards: r.Shards})
}

// itemLimits takes a start of each of the job's PerItem limits before
// its item starts, waiting until the deadline less the margin at most; a
// wait cut short leaves the item unstarted (retried later).
func (c *Consumer) itemLimits(ctx context.Context, deadline time.Time, m *messageRun) (verdict, bool) {
	d := m.d
	var per []baton.RateLimit
	for _, r := range d.job.RateLimits {
		if r.PerItem {
			per = append(per, r)
		}
	}
	if len(per) == 0 {
		return verdict{}, true
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-d.job.Limits.DeadlineMargin))
		defer cancel()
	}
	l := taskLimiter{store: c.RateLimits, job: d.job, now: c.now}
	for _, r := range per {
		if err := l.Wait(ctx, r.Name); err != nil {
			return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err)), false
		}
	}
	return verdict{}, true
}
