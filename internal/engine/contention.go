package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// Contention is the durable record of refused lease acquisitions of one
// job: how many, and the latest one.
type Contention struct {
	Job   string
	Count int64
	// Last is when the latest refusal happened (by the refused caller's
	// clock); zero when Count is 0.
	Last time.Time
	// Holder is the lease holder that refused the latest acquisition.
	Holder lease.Lease
}

// ContentionStore is an optional ability of a backend: it counts refused
// lease acquisitions per job, durably, so that an operator's `baton status`
// in another process sees them. Both methods may be called concurrently
// from several processes.
type ContentionStore interface {
	// RecordContention adds one refusal of job's lease, by holder, at now.
	RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time) error
	// Contention returns job's record; a job never contended has Count 0
	// and no error.
	Contention(ctx context.Context, job string) (Contention, error)
}

// CountContention returns leases with every refused Acquire (an error
// matching lease.ErrHeld) recorded in c. Recording is best effort: its
// failure is logged and never changes Acquire's result. A nil c returns
// leases unchanged.
func CountContention(leases lease.Store, c ContentionStore, log *slog.Logger) lease.Store {
	if c == nil {
		return leases
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &countingLeases{Store: leases, counter: c, log: log}
}

type countingLeases struct {
	lease.Store
	counter ContentionStore
	log     *slog.Logger
}

func (s *countingLeases) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	l, err := s.Store.Acquire(ctx, p)
	var held *lease.HeldError
	if errors.As(err, &held) {
		if rerr := s.counter.RecordContention(ctx, p.Job, held.Holder, p.Now); rerr != nil {
			s.log.WarnContext(ctx, "lease contention not recorded", slog.String("job", p.Job), slog.Any("error", rerr))
		}
	}
	return l, err
}
