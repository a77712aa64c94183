package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ratelimit"
)

// ErrNoRateLimits matches the error of a limit taken on a consumer
// without a rate limit store.
var ErrNoRateLimits = errors.New("no rate limit store")

// taskLimiter is a message's baton.Limiter: the limits of its job, taken
// from the consumer's store. The slots of in-flight limits it takes are
// held under one holder name until the message's run ends (freeAll), and
// renewed to the claim's new end by each heartbeat (renew).
type taskLimiter struct {
	store  ratelimit.Store
	job    baton.Job
	now    func() time.Time
	holder string

	mu    sync.Mutex
	until time.Time      // the end of the holds: the item's lease
	held  map[string]int // in-flight limit → slot held
}

func newTaskLimiter(c *Consumer, job baton.Job, key string, until time.Time) *taskLimiter {
	return &taskLimiter{store: c.RateLimits, job: job, now: c.now, until: until,
		holder: c.Owner + "/" + key + "/" + strconv.FormatUint(rand.Uint64(), 36)}
}

func (l *taskLimiter) Wait(ctx context.Context, name string) error {
	r, ok := l.job.RateLimit(name)
	if !ok {
		return fmt.Errorf("job %s declares no rate limit %q", l.job.Name, name)
	}
	if l.store == nil {
		return fmt.Errorf("rate limit %s: %w", name, ErrNoRateLimits)
	}
	lm := ratelimit.Limiter{Store: l.store, NowFunc: l.now}
	if r.InFlight == 0 {
		return lm.Wait(ctx, ratelimit.Limit{Name: r.Name, Starts: r.Starts, Per: r.Per, Shards: r.Shards})
	}
	l.mu.Lock()
	_, have := l.held[name]
	l.mu.Unlock()
	if have {
		return nil // the item holds a slot of it already
	}
	slot, err := lm.Acquire(ctx, ratelimit.Limit{Name: r.Name, InFlight: r.InFlight}, l.holder, l.holdUntil)
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]int{}
	}
	l.held[name] = slot
	l.mu.Unlock()
	return nil
}

func (l *taskLimiter) holdUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// renew moves the holds' end to until (a heartbeat's new lease end),
// renewing every slot held.
func (l *taskLimiter) renew(ctx context.Context, until time.Time) error {
	l.mu.Lock()
	l.until = until
	held := make(map[string]int, len(l.held))
	for n, s := range l.held {
		held[n] = s
	}
	l.mu.Unlock()
	now := l.now()
	var errs []error
	for name, slot := range held {
		err := l.store.Hold(ctx, ratelimit.SlotParams{Name: name, Slot: slot, Holder: l.holder, Until: until, Now: now})
		if err != nil {
			errs = append(errs, fmt.Errorf("rate limit %s: renew slot %d: %w", name, slot, err))
		}
	}
	return errors.Join(errs...)
}

// freeAll gives back every slot held; a slot that cannot be freed comes
// back when its hold runs out.
func (l *taskLimiter) freeAll(ctx context.Context, log *slog.Logger) {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	for name, slot := range held {
		err := l.store.Free(ctx, ratelimit.SlotParams{Name: name, Slot: slot, Holder: l.holder})
		if err != nil {
			log.WarnContext(ctx, "rate limit slot not freed: it comes back when its hold runs out",
				slog.String("rate_limit", name), slog.Int("slot", slot), slog.Any("error", err))
		}
	}
}

// itemLimits takes a start (or a slot) of each of the job's PerItem
// limits before its item starts, waiting until the deadline less the
// margin at most; a wait cut short leaves the item unstarted (retried
// later).
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
	for _, r := range per {
		if err := m.limits.Wait(ctx, r.Name); err != nil {
			return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err)), false
		}
	}
	return verdict{}, true
}
