package lease

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Contention is one job's count of refused acquisitions and the latest
// one.
type Contention struct {
	Job   string
	Count int64
	// Last is when the latest refusal happened (by the refused caller's
	// clock); zero when Count is 0.
	Last time.Time
	// Holder is the lease holder that refused the latest acquisition
	// (Owner, Fence, ExpiresAt).
	Holder Lease
	// StreakStart is when the current streak of refusals began: the
	// earliest refusal by Holder.Owner since a refusal last named another
	// holder. Zero when unknown (never refused, or a record written before
	// streaks were kept: its streak starts at its next refusal).
	StreakStart time.Time
	// TTL is the lease TTL the latest refused caller asked for: the length
	// of one cycle of the streak. Zero when unknown.
	TTL time.Duration
}

// EscalationCycles is how many TTL cycles of refusals in a row, by one
// holder, make a key escalated (Contention.Escalated).
const EscalationCycles = 3

// Escalated reports whether the contention persists beyond
// EscalationCycles TTL cycles at now: acquirers have been refused by the
// same holder from StreakStart to Last, at least EscalationCycles × TTL,
// and the latest refusal is at most one TTL old (refusals still go on).
// A streak of unknown start or TTL is never escalated.
func (c Contention) Escalated(now time.Time) bool {
	if c.Count == 0 || c.StreakStart.IsZero() || c.TTL <= 0 {
		return false
	}
	return c.Last.Sub(c.StreakStart) >= EscalationCycles*c.TTL && now.Sub(c.Last) <= c.TTL
}

// Streak returns how long the current streak of refusals has lasted (Last
// minus StreakStart); zero when unknown.
func (c Contention) Streak() time.Duration {
	if c.Count == 0 || c.StreakStart.IsZero() {
		return 0
	}
	return c.Last.Sub(c.StreakStart)
}

// ContentionCounter is an optional ability of a Store: counting refused
// acquisitions, durably, for operators (`baton status` and `baton lease
// show` in one process see the refusals every coordinator met, in any
// process or function). Callers find it by type assertion on the Store;
// Counting uses it to record the refusals its Acquire meets. Nothing
// decides on the counts: a lost record only makes a count low.
//
// Both methods may be called concurrently, from several processes; counts
// from all of them add up.
type ContentionCounter interface {
	// RecordContention adds one refusal of job's lease, by holder, at now,
	// of a caller that asked for ttl. A refusal by the holder (Owner) of
	// the latest refusal continues its streak; one by another holder, or
	// on a record without a streak, starts a new streak at now. An empty
	// job is an error, and records nothing.
	RecordContention(ctx context.Context, job string, holder Lease, now time.Time, ttl time.Duration) error
	// Contention returns job's record; a job never contended has Count 0,
	// Job and Holder.Job set, and no error.
	Contention(ctx context.Context, job string) (Contention, error)
}

// Counting returns s with every refused Acquire (an error matching
// ErrHeld) recorded through s's ContentionCounter. Recording is best
// effort: its failure is logged (log may be nil) and never changes
// Acquire's result. The store returned is a ContentionCounter too. A store
// without the ability, or one Counting already wraps, is returned
// unchanged.
func Counting(s Store, log *slog.Logger) Store {
	if _, ok := s.(*counting); ok {
		return s
	}
	counter, ok := s.(ContentionCounter)
	if !ok {
		return s
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &counting{Store: s, counter: counter, log: log}
}

type counting struct {
	Store
	counter ContentionCounter
	log     *slog.Logger
}

func (c *counting) Acquire(ctx context.Context, p AcquireParams) (Lease, error) {
	l, err := c.Store.Acquire(ctx, p)
	var held *HeldError
	if errors.As(err, &held) {
		if rerr := c.counter.RecordContention(ctx, p.Job, held.Holder, p.Now, p.TTL); rerr != nil {
			c.log.WarnContext(ctx, "lease contention not recorded", slog.String("job", p.Job), slog.Any("error", rerr))
		}
	}
	return l, err
}

func (c *counting) RecordContention(ctx context.Context, job string, holder Lease, now time.Time, ttl time.Duration) error {
	return c.counter.RecordContention(ctx, job, holder, now, ttl)
}

func (c *counting) Contention(ctx context.Context, job string) (Contention, error) {
	return c.counter.Contention(ctx, job)
}

// Unwrap returns the store Counting wraps, for the optional abilities it
// does not forward (PauserOf).
func (c *counting) Unwrap() Store { return c.Store }
