package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/telemetry"
)

// Parts are what the core is built from (Build): the stores and queues a
// backend (PartsOf) or a Lambda function's parameters provide, the
// catalog, and the settings every coordinator and consumer shares.
type Parts struct {
	Catalog *baton.Catalog
	// Leases is the coordinator's lease store; nil: the parts build no
	// coordinator (Core.Coordinator is an error), only consumers.
	Leases lease.Store
	Ledger ledger.Store
	// Effects is the consumers' store of fenced effects; nil: the parts
	// build no consumer (Core.Consumer is an error).
	Effects effect.Store
	// RateLimits keeps shared rate limits' counters (consumer.Consumer).
	RateLimits ratelimit.Store
	Work       queue.Sender // the shared work queue
	// JobQueues are the job queues (baton.JobQueue) by name: every queue
	// a job of Catalog names must be here.
	JobQueues map[string]queue.Sender
	// DeadLetter, optional, receives malformed and exhausted messages.
	DeadLetter queue.Sender
	// MaxReceives is the work queue's redrive limit; 0: the queue's.
	MaxReceives int
	// RetryDelay is the consumers' (consumer.Consumer.RetryDelay).
	RetryDelay time.Duration
	// Owner prefixes the owners the core's parts are given when their
	// caller names none (the chain starter's: Owner/chain); "" means
	// host/pid.
	Owner     string
	NowFunc   func() time.Time
	Logger    *slog.Logger // nil: discard
	Telemetry *telemetry.Telemetry
}

// Core is the core built from Parts: the job-queue router, the chain
// starter, the consumers' run and page caches, built once per process;
// its coordinators and consumers share them.
type Core struct {
	p Parts
	// Router sends each job's messages to its job queue, the others' to
	// the work queue: what every coordinator and consumer of the core
	// sends through.
	Router queue.Sender
	runs   *consumer.RunCache
	pages  *consumer.PageCache
	chains coordinator.Coordinator // the chain starter: no lease store
}

// ErrNoCatalog is matched by Build's error when the parts have no catalog.
var ErrNoCatalog = errors.New("no job catalog")

// Build builds the core of p. It checks that p has a catalog, a ledger
// and a work queue, and a queue for every job queue a job names.
func Build(p Parts) (*Core, error) {
	var missing []string
	if p.Catalog == nil {
		return nil, ErrNoCatalog
	}
	if p.Ledger == nil {
		missing = append(missing, "ledger")
	}
	if p.Work == nil {
		missing = append(missing, "work queue")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("build the core: no %v", missing)
	}
	if p.Owner == "" {
		host, _ := os.Hostname()
		p.Owner = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	routes := map[string]queue.Sender{}
	queues := jobspec.Queues(p.Catalog)
	names := make([]string, 0, len(queues))
	for name := range queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := p.JobQueues[name]
		if q == nil {
			return nil, fmt.Errorf("build the core: no queue %s for jobs %v", name, queues[name])
		}
		for _, j := range queues[name] {
			routes[j] = q
		}
	}
	c := &Core{p: p, Router: p.Work, runs: &consumer.RunCache{}, pages: &consumer.PageCache{}}
	if len(routes) > 0 {
		c.Router = queue.ByJob(p.Work, routes)
	}
	// Chained runs start under fence 0 (coordinator.StartChains without
	// a lease store): a consumer holds no lease, and on Lambda its role
	// may not write one.
	c.chains = coordinator.Coordinator{Ledger: p.Ledger, Queue: c.Router, Jobs: p.Catalog,
		Owner: p.Owner + "/chain", NowFunc: p.NowFunc, Logger: p.Logger, Telemetry: p.Telemetry}
	return c, nil
}

// Parts returns the parts the core was built from, defaults applied.
func (c *Core) Parts() Parts { return c.p }

// Coordinator returns a coordinator of the core owned by owner. Every
// path to it (the local runtime, Lambda, HTTP, baton invoke) counts
// refused lease acquisitions for operators (lease.Counting). Callers that
// serve invocations keep one and set Owner and Logger per invocation.
func (c *Core) Coordinator(owner string) (*coordinator.Coordinator, error) {
	if c.p.Leases == nil {
		return nil, errors.New("coordinator: no lease store")
	}
	co := &coordinator.Coordinator{
		Leases: lease.Counting(c.p.Leases, c.p.Logger), Ledger: c.p.Ledger, Queue: c.Router, Jobs: c.p.Catalog,
		Owner: owner, NowFunc: c.p.NowFunc, Logger: c.p.Logger, Telemetry: c.p.Telemetry,
	}
	if len(c.p.JobQueues) > 0 {
		co.Classes = c.p.JobQueues
	}
	return co, nil
}

// Consumer returns a consumer of the core owned by owner, whose
// deliveries come from the queue from (queue.ReceivedFrom: heartbeats
// extend a message on its own queue; nil: none, as for a pushed message)
// and which starts the chains of the runs it finishes with the core's
// chain starter (Chains). Callers that serve invocations keep one and set
// Owner, Logger and ChainsFunc per invocation.
func (c *Core) Consumer(from queue.Sender, owner string) (*consumer.Consumer, error) {
	if c.p.Effects == nil {
		return nil, errors.New("consumer: no effect store")
	}
	if c.p.MaxReceives < 0 {
		return nil, errors.New("consumer: MaxReceives must not be negative")
	}
	q := c.Router
	if from != nil {
		q = queue.ReceivedFrom(c.Router, from)
	}
	co := &consumer.Consumer{
		Ledger: c.p.Ledger, Queue: q, Jobs: c.p.Catalog, Effects: c.p.Effects, Runs: c.runs, Pages: c.pages,
		RateLimits: c.p.RateLimits, ChainsFunc: c.chains.StartChains,
		Owner: owner, NowFunc: c.p.NowFunc, Logger: c.p.Logger,
		MaxReceives: c.p.MaxReceives, RetryDelay: c.p.RetryDelay, Telemetry: c.p.Telemetry,
	}
	if c.p.DeadLetter != nil {
		co.DeadLetter = c.p.DeadLetter
	}
	return co, nil
}

// Chains returns the core's chain starter (consumer.Consumer.ChainsFunc)
// under owner and log, for an invocation that has its own: the starter
// is built once, with the core; a call only names who starts.
func (c *Core) Chains(owner string, log *slog.Logger) func(context.Context, ledger.Run) error {
	s := c.chains
	s.Owner, s.Logger = owner, log
	return s.StartChains
}

// PartsOf returns the parts of b for catalog c, its job queues opened
// (JobQueues) and returned too; the caller sets the owner, the clock, the
// logger, the telemetry and the retry delay.
func PartsOf(ctx context.Context, b backend.Backend, c *baton.Catalog) (Parts, []JobQueue, error) {
	_, queues, err := JobQueues(ctx, b, c)
	if err != nil {
		return Parts{}, nil, err
	}
	p := Parts{Catalog: c, Leases: b.Leases, Ledger: b.Ledger, Effects: b.Effects, RateLimits: b.RateLimits,
		Work: b.Work, MaxReceives: b.MaxReceives}
	if b.DeadLetter != nil {
		p.DeadLetter = b.DeadLetter
	}
	if len(queues) > 0 {
		p.JobQueues = map[string]queue.Sender{}
		for _, q := range queues {
			p.JobQueues[q.Name] = q.Queue
		}
	}
	return p, queues, nil
}
