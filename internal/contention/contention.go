// Package contention counts refused lease acquisitions, durably, for
// operators: `baton status` and `baton lease show` in one process see the
// refusals every coordinator met, in any process or function.
//
// Store is an optional ability of a backend (internal/sqlite and
// internal/awsdynamodb implement it); Counting wraps a lease.Store so that
// each refused Acquire is recorded. Nothing decides on the counts: a lost
// record only makes the count low.
package contention

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// Record is one job's count of refused acquisitions and the latest one.
type Record struct {
	Job   string
	Count int64
	// Last is when the latest refusal happened (by the refused caller's
	// clock); zero when Count is 0.
	Last time.Time
	// Holder is the lease holder that refused the latest acquisition
	// (Owner, Fence, ExpiresAt).
	Holder lease.Lease
}

// Store keeps the records. Both methods may be called concurrently, from
// several processes; counts from all of them add up.
type Store interface {
	// RecordContention adds one refusal of job's lease, by holder, at now.
	RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time) error
	// Contention returns job's record; a job never contended has Count 0
	// and no error.
	Contention(ctx context.Context, job string) (Record, error)
}

// Counting returns leases with every refused Acquire (an error matching
// lease.ErrHeld) recorded in s. Recording is best effort: its failure is
// logged (log may be nil) and never changes Acquire's result. A nil s
// returns leases unchanged.
func Counting(leases lease.Store, s Store, log *slog.Logger) lease.Store {
	if s == nil {
		return leases
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &counting{Store: leases, counter: s, log: log}
}

type counting struct {
	lease.Store
	counter Store
	log     *slog.Logger
}

func (c *counting) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	l, err := c.Store.Acquire(ctx, p)
	var held *lease.HeldError
	if errors.As(err, &held) {
		if rerr := c.counter.RecordContention(ctx, p.Job, held.Holder, p.Now); rerr != nil {
			c.log.WarnContext(ctx, "lease contention not recorded", slog.String("job", p.Job), slog.Any("error", rerr))
		}
	}
	return l, err
}
