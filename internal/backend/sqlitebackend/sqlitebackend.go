// Package sqlitebackend builds the embedded engine's backend: every store
// and both queues in one SQLite file, which several processes may share.
package sqlitebackend

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/sqlite"
)

// Embedded queue names and their redrive limit.
const (
	WorkQueue       = "work"
	DeadLetterQueue = "work-dlq"
	MaxReceives     = 5
	// JobQueuePrefix prefixes the name of a job's own queue
	// (baton.JobQueue): job queue "noisy" is the queue "job-noisy".
	JobQueuePrefix = "job-"
)

// pollInterval is how often an idle consumer looks for new messages: the
// latency a message waits in the embedded queue before a consumer sees it.
// An idle look is one read, without a write lock.
const pollInterval = 10 * time.Millisecond

// Open opens the embedded backend on the SQLite file at path, creating
// it and applying the store's migrations as needed.
func Open(ctx context.Context, path string) (backend.Backend, error) {
	return open(ctx, path, nil)
}

// Options tune OpenWith. The zero value is Open's.
type Options struct {
	// TracerProvider records each statement of the store run under a
	// traced step (an item's claim, the coordinator's lease…) as a span,
	// a child of that step; nil: the global provider.
	TracerProvider trace.TracerProvider
}

// OpenWith opens the embedded backend as Open does, with o's options
// (nil: none).
func OpenWith(ctx context.Context, path string, o *Options) (backend.Backend, error) {
	if o == nil {
		return open(ctx, path, nil)
	}
	return open(ctx, path, &sqlite.Options{TracerProvider: o.TracerProvider})
}

// OpenReadOnly opens an existing embedded store for reading: nothing is
// created or migrated and every write fails. A path without a store is an
// error matching sqlite.ErrNoStore.
func OpenReadOnly(ctx context.Context, path string) (backend.Backend, error) {
	return open(ctx, path, &sqlite.Options{ReadOnly: true})
}

func open(ctx context.Context, path string, o *sqlite.Options) (backend.Backend, error) {
	db, err := sqlite.Open(ctx, path, o)
	if err != nil {
		return backend.Backend{}, err
	}
	dlq, err := sqlite.OpenQueue(ctx, db, DeadLetterQueue, &sqlite.QueueOptions{PollInterval: pollInterval})
	if err != nil {
		db.Close()
		return backend.Backend{}, fmt.Errorf("open queue %s: %w", DeadLetterQueue, err)
	}
	work, err := sqlite.OpenQueue(ctx, db, WorkQueue, &sqlite.QueueOptions{DeadLetterQueue: DeadLetterQueue, MaxReceives: MaxReceives, PollInterval: pollInterval})
	if err != nil {
		db.Close()
		return backend.Backend{}, fmt.Errorf("open queue %s: %w", WorkQueue, err)
	}
	led := sqlite.NewLedgerStore(db)
	return backend.Backend{
		JobQueueFunc: func(ctx context.Context, name string) (backend.Queue, error) {
			q, err := sqlite.OpenQueue(ctx, db, JobQueuePrefix+name, &sqlite.QueueOptions{DeadLetterQueue: DeadLetterQueue, MaxReceives: MaxReceives, PollInterval: pollInterval})
			if err != nil {
				return nil, fmt.Errorf("open queue %s: %w", JobQueuePrefix+name, err)
			}
			return q, nil
		},
		Name:        "sqlite",
		CheapProbes: true,
		Leases:      sqlite.NewLeaseStore(db),
		Locks:       sqlite.NewLockStore(db),
		Ledger:      led,
		Pruner:      led,
		Retention:   "finished runs, their items (results included), settle marks and item pages are pruned past each job's Retention by the local runtime (baton run, baton serve), a bounded pass every few minutes",
		Effects:     sqlite.NewEffectStore(db),
		RateLimits:  sqlite.NewRateLimitStore(db),
		Work:        work,
		DeadLetter:  dlq,
		MaxReceives: MaxReceives,
		CloseFunc:   db.Close,
	}, nil
}
