// Package backend is the one home of what an engine is made of: the
// stores and queues one deployment uses (Backend). Each engine builds its
// Backend in a package of its own, so that a binary links only the engines
// it imports:
//
//   - sqlitebackend: the embedded store, one SQLite file (the local default);
//   - awsbackend: DynamoDB (one table) and SQS (the work queue and its
//     dead-letter queue), from the SDK's standard configuration;
//   - postgresbackend: every store and both queues in one PostgreSQL
//     database.
//
// The Lambda functions import awsbackend alone; the operator CLI and the
// HTTP handlers import the others.
//
// Each engine's package registers it (Register, from an init function) by
// name and URL scheme, and every entry point opens engines through the
// registry alone (Open, OpenLocks): the CLI, batonclient, batonhttp and
// batonlock thus accept every engine their binary links, and no other.
package backend

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
)

// Queue is a queue the engine both sends to and receives from.
type Queue interface {
	queue.Sender
	queue.Receiver
}

// Backend is the set of stores and queues one deployment uses.
type Backend struct {
	Name string // the engine's name: "sqlite", "aws" or "postgres"
	// Leases may also count refused acquisitions for operators (the
	// optional lease.ContentionCounter); the engine wraps it in
	// lease.Counting so that the coordinator records them.
	Leases lease.Store
	// Locks holds the application locks (batonlock: LOCK# records on
	// DynamoDB, tables of their own in SQL), which the dashboard shows;
	// nil: none are shown. Nothing in baton's own runtime uses them.
	Locks   lease.Store
	Ledger  ledger.Store
	Effects effect.Store // the jobs' fenced effects (baton.Task.Effects)
	// RateLimits keeps the counters of shared rate limits (baton.RateLimit).
	RateLimits  ratelimit.Store
	Work        Queue
	DeadLetter  Queue // may be nil
	MaxReceives int   // the work queue's redrive limit
	// ReceiveWait is how long an idle consumer's receive waits for a
	// message (a long poll); 0 means 500ms.
	ReceiveWait time.Duration
	// CheapProbes says a receive that finds its queue empty costs next to
	// nothing (no request fee, no network hop to a service): the local
	// runtime may then probe the priority classes' queues in turn, highest
	// Priority first (queue.Priority). False on SQS, where each empty
	// receive is a billed request: its classes are separate queues whose
	// consumers are weighted by their concurrency, with no order between
	// them.
	CheapProbes bool
	// Pruner, when set, prunes finished runs past a job's retention; nil
	// when the backend removes them itself (DynamoDB's time to live).
	Pruner ledger.Pruner
	// Retention says how the backend keeps finished runs, for status.
	Retention string
	// JobQueueFunc, optional, returns the work queue of the given name
	// (baton.JobQueue): a queue of its own for the jobs that name it, with
	// the work queue's dead-letter queue and redrive limit. nil: the engine
	// has no job queues, and a catalog whose jobs name one is refused.
	JobQueueFunc func(ctx context.Context, name string) (Queue, error)
	// CloseFunc releases the backend's resources (Close calls it).
	CloseFunc func() error
}

// Close releases the backend's resources; nil CloseFunc: nothing to release.
func (b Backend) Close() error {
	if b.CloseFunc == nil {
		return nil
	}
	return b.CloseFunc()
}
