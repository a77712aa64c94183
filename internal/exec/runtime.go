// Package exec is baton's runtime: the one place that builds the core,
// and the local runtime that runs it.
//
// # Building the core
//
// Build makes a Core from Parts (a backend's, PartsOf, or a Lambda
// function's parameters): the job-queue router (each job's messages to
// its queue, baton.JobQueue), the chain starter (chained runs under fence
// 0, consumers holding no lease), and the consumers' run and page caches,
// once per process. Core.Coordinator and Core.Consumer return the
// coordinators and consumers that share them; Core.Chains names who
// starts a chain for an invocation that has its own owner and log. Every
// entry point asks it: the local runtime (New), the Lambda handlers
// (internal/lambdaapp), the HTTP handlers (internal/httpapp), and through
// them the CLI, the dashboard and batonclient. They set the invocation's
// owner, logger and deadline, nothing more; internal/archtest fails when
// another package builds a coordinator.Coordinator or a consumer.Consumer.
//
// A coordinator's answer is the same for every transport: Respond makes
// the CoordinatorResponse of a summary (the Lambda result, the HTTP
// body), and Incomplete is the retry decision (ErrIncomplete: a tick or
// submission waiting behind another holder's lease, a fan-out stopped
// early).
//
// # The local runtime
//
// Runtime runs baton outside Lambda, the coordinator on an in-process
// schedule and consumers fed by pollers that behave like Lambda's SQS
// event source, on any engine (a backend: the embedded SQLite store,
// PostgreSQL, AWS endpoints).
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
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/poller"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/schedule"
	"github.com/batonhq/baton/internal/telemetry"
)

// Options tune an Runtime.
type Options struct {
	Catalog *baton.Catalog
	// Consumers is the number of batches processed at once (the event
	// source's maximum concurrency); 0 means 4.
	Consumers int
	// BatchSize is the most messages per batch; 0 means 10. Up to 10, or
	// up to 100 on PostgreSQL, whose batch of messages is received,
	// claimed, completed and deleted a few statements per batch.
	BatchSize int
	// BatchTimeout is each batch's deadline (Lambda's timeout); 0 means 30s.
	BatchTimeout time.Duration
	// RetryDelay makes failed messages visible again after this long
	// instead of after their visibility timeout; 0 means 1s.
	RetryDelay time.Duration
	Owner      string // prefix of lease and item owners; empty means host/pid
	Logger     *slog.Logger
	NowFunc    func() time.Time
	// Telemetry is the tracer and meter of the coordinator and the
	// consumers; nil: the global OpenTelemetry providers.
	Telemetry *telemetry.Telemetry
}

// Runtime wires a backend to the core.
type Runtime struct {
	backend     backend.Backend
	opts        Options
	Coordinator *coordinator.Coordinator
	Consumer    *consumer.Consumer // the shared work queue's
	// pools are the consumer pools of the job queues (baton.JobQueue),
	// by queue name: each its own queue, consumer and concurrency.
	pools []pool
	// router sends each job's messages to its queue (JobQueues).
	router queue.Sender
	core   *Core
}

// pool is the consumers of one job queue.
type pool struct {
	name        string
	queue       backend.Queue
	consumer    *consumer.Consumer
	concurrency int
	priority    int // baton.JobQueue.Priority
}

// New returns a runtime on b: its core built from b's parts (PartsOf,
// Build), a coordinator, the shared work queue's consumer and a consumer
// per job queue.
func New(b backend.Backend, o Options) (*Runtime, error) {
	if o.Catalog == nil {
		return nil, errors.New("local runtime: no job catalog")
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		o.Owner = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Runtime{backend: b, opts: o}
	parts, queues, err := PartsOf(context.Background(), b, o.Catalog)
	if err != nil {
		return nil, fmt.Errorf("local runtime: %w", err)
	}
	parts.Owner, parts.NowFunc, parts.Logger, parts.Telemetry, parts.RetryDelay = o.Owner, o.NowFunc, o.Logger, o.Telemetry, o.retryDelay()
	core, err := Build(parts)
	if err != nil {
		return nil, fmt.Errorf("local runtime: %w", err)
	}
	e.core, e.router = core, core.Router
	if e.Coordinator, err = core.Coordinator(o.Owner + "/coordinator"); err != nil {
		return nil, fmt.Errorf("local runtime: %w", err)
	}
	if e.Consumer, err = core.Consumer(b.Work, o.Owner+"/consumer"); err != nil {
		return nil, fmt.Errorf("local runtime: %w", err)
	}
	for _, q := range queues {
		c, err := core.Consumer(q.Queue, o.Owner+"/consumer-"+q.Name)
		if err != nil {
			return nil, fmt.Errorf("local runtime: %w", err)
		}
		e.pools = append(e.pools, pool{name: q.Name, queue: q.Queue, consumer: c, concurrency: q.Concurrency, priority: q.Priority})
	}
	return e, nil
}

// JobQueue is one opened job queue (baton.JobQueue).
type JobQueue struct {
	Name        string
	Queue       backend.Queue
	Concurrency int
	Priority    int
}

// JobQueues opens, on b, the queues c's jobs name (baton.JobQueue) and
// returns them with the sender that routes each job's messages to its
// queue and the others' to b.Work: what every coordinator and consumer of
// c sends through. Without job queues the sender is b.Work itself. A
// backend without the ability (JobQueueFunc nil) is an error when jobs
// name queues.
func JobQueues(ctx context.Context, b backend.Backend, c *baton.Catalog) (queue.Sender, []JobQueue, error) {
	queues := jobspec.Queues(c)
	if len(queues) == 0 {
		return b.Work, nil, nil
	}
	if b.JobQueueFunc == nil {
		return nil, nil, fmt.Errorf("the %s backend has no job queues, and jobs name some (%v)", b.Name, queues)
	}
	routes := map[string]queue.Sender{}
	names := make([]string, 0, len(queues))
	for name := range queues {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []JobQueue
	for _, name := range names {
		q, err := b.JobQueueFunc(ctx, name)
		if err != nil {
			return nil, nil, fmt.Errorf("job queue %s: %w", name, err)
		}
		jobs := queues[name]
		j, _ := c.Lookup(jobs[0])
		out = append(out, JobQueue{Name: name, Queue: q, Concurrency: j.Queue.Concurrency(), Priority: j.Queue.Priority})
		for _, job := range jobs {
			routes[job] = q
		}
	}
	return queue.ByJob(b.Work, routes), out, nil
}

// SetStop sets the stop channel of every consumer of the runtime (the
// shared queue's and each job queue's): see consumer.Consumer.Stop.
func (e *Runtime) SetStop(stop <-chan struct{}) {
	e.Consumer.Stop = stop
	for _, p := range e.pools {
		p.consumer.Stop = stop
	}
}

// backend.Backend returns the runtime's backend.
func (e *Runtime) Backend() backend.Backend { return e.backend }

func (e *Runtime) now() time.Time {
	if e.opts.NowFunc != nil {
		return e.opts.NowFunc()
	}
	return time.Now()
}

// Trigger runs the coordinator for the tick of jobName at or before at.
func (e *Runtime) Trigger(ctx context.Context, jobName string, at time.Time, force bool) (coordinator.Summary, error) {
	deadline := e.now().Add(e.batchTimeout())
	return e.Coordinator.Run(ctx, coordinator.Trigger{Job: jobName, At: at, Force: force, Deadline: deadline})
}

func (e *Runtime) batchTimeout() time.Duration {
	if e.opts.BatchTimeout > 0 {
		return e.opts.BatchTimeout
	}
	return 30 * time.Second
}

// Poller returns a poller feeding the shared work queue to the consumer.
func (e *Runtime) Poller() *poller.Poller {
	return e.poller(e.backend.Work, e.Consumer, max(e.opts.Consumers, 1))
}

// Pollers returns the poller of the shared work queue and one per job
// queue, each with its own consumer and concurrency (the job queue's
// MaxConcurrency), so that a noisy job cannot starve the others. On a
// backend whose empty receives are cheap (backend.Backend.CheapProbes: the
// embedded store, PostgreSQL) the job queues with a Priority share one
// poller instead (priorityPoller).
func (e *Runtime) Pollers() []*poller.Poller {
	ps := []*poller.Poller{e.Poller()}
	var ordered []pool
	for _, p := range e.pools {
		if p.priority > 0 && e.backend.CheapProbes {
			ordered = append(ordered, p)
			continue
		}
		ps = append(ps, e.poller(p.queue, p.consumer, p.concurrency))
	}
	if len(ordered) > 0 {
		ps = append(ps, e.priorityPoller(ordered))
	}
	return ps
}

// priorityPoller returns one poller over the pools, highest Priority
// first, whose concurrency is the sum of theirs: each receive serves the
// highest class with work, but a class behind its share (its
// concurrency's part of the sum) goes first (queue.Priority). Each batch
// comes from one class and is handled by that class's consumer.
func (e *Runtime) priorityPoller(pools []pool) *poller.Poller {
	sort.SliceStable(pools, func(a, b int) bool { return pools[a].priority > pools[b].priority })
	total := 0
	for _, p := range pools {
		total += p.concurrency
	}
	classes := make([]queue.Class, len(pools))
	for i, p := range pools {
		classes[i] = queue.Class{Receiver: p.queue, Share: float64(p.concurrency) / float64(total)}
	}
	pr, err := queue.NewPriority(classes...)
	if err != nil {
		panic(err) // shares of concurrencies: in 0..1, summing to 1
	}
	pl := e.poller(pr, nil, total)
	pl.HandleFunc = func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) []string {
		if len(msgs) == 0 {
			return nil
		}
		i, _, err := pr.Class(msgs[0].ReceiptHandle)
		if err != nil {
			failed := make([]string, len(msgs))
			for k, m := range msgs {
				failed[k] = m.MessageID
			}
			return failed
		}
		// The consumer changes visibility on its own queue: it gets the
		// handles that queue knows (the poller deletes by the prefixed ones).
		own := make([]queue.Delivery, len(msgs))
		for k, m := range msgs {
			own[k] = m
			if _, h, err := pr.Class(m.ReceiptHandle); err == nil {
				own[k].ReceiptHandle = h
			}
		}
		return handle(ctx, pools[i].consumer, deadline, own)
	}
	return pl
}

// retryDelay is the consumers' RetryDelay: how long a failed message
// whose delay nothing names stays hidden.
func (o Options) retryDelay() time.Duration {
	if o.RetryDelay <= 0 {
		return time.Second
	}
	return o.RetryDelay
}

// poller returns the poller of c's queue. Failed messages are hidden by
// the consumer itself, each for its own delay (a job's retry policy, a
// processor's RetryAfter, else Options.RetryDelay): the poller leaves
// them as they are.
func (e *Runtime) poller(from queue.Receiver, c *consumer.Consumer, concurrency int) *poller.Poller {
	wait := e.backend.ReceiveWait
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	return &poller.Poller{
		Receiver:    from,
		BatchSize:   e.opts.BatchSize,
		Timeout:     e.batchTimeout(),
		Concurrency: concurrency,
		Wait:        wait,
		NowFunc:     e.opts.NowFunc,
		Logger:      e.opts.Logger,
		HandleFunc: func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) []string {
			return handle(ctx, c, deadline, msgs)
		},
	}
}

// handle hands a batch to c and returns the ids of its failed messages.
func handle(ctx context.Context, c *consumer.Consumer, deadline time.Time, msgs []queue.Delivery) []string {
	res := c.Handle(ctx, deadline, msgs)
	failed := make([]string, len(res.Failed))
	for i, f := range res.Failed {
		failed[i] = f.MessageID
	}
	return failed
}

// Consume runs the consumers until ctx is done; batches in flight finish.
// Every queue has its pollers: the shared work queue's and one per job
// queue (Pollers). While it runs, the queues' depths are reported to the
// telemetry's meter provider (baton.queue.depth).
func (e *Runtime) Consume(ctx context.Context) error {
	defer e.opts.Telemetry.ObserveQueueDepths(e.countedQueues())()
	ps := e.Pollers()
	if len(ps) == 1 {
		return ps[0].Run(ctx)
	}
	errs := make(chan error, len(ps))
	for _, p := range ps {
		go func() { errs <- p.Run(ctx) }()
	}
	var all []error
	for range ps {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// countedQueues are the runtime's queues that can count their messages,
// named for the queue depth metric: "work", "work-dlq" and "job-" and
// each job queue's name.
func (e *Runtime) countedQueues() []telemetry.CountedQueue {
	var out []telemetry.CountedQueue
	add := func(name string, q backend.Queue) {
		if c, ok := q.(queue.Counter); ok {
			out = append(out, telemetry.CountedQueue{Name: name, Counter: c})
		}
	}
	add("work", e.backend.Work)
	if e.backend.DeadLetter != nil {
		add("work-dlq", e.backend.DeadLetter)
	}
	for _, p := range e.pools {
		add("job-"+p.name, p.queue)
	}
	return out
}

// Schedule fires the coordinator for jobName at every tick of its
// schedule until ctx is done. onTick, if set, gets each trigger's summary.
func (e *Runtime) Schedule(ctx context.Context, jobName string, onTick func(coordinator.Summary, error)) error {
	j, err := e.opts.Catalog.Lookup(jobName)
	if err != nil {
		return err
	}
	if !j.Scheduled() {
		return fmt.Errorf("job %s has %w: it runs on demand (submit) or by a chain", jobName, baton.ErrNoSchedule)
	}
	s, err := schedule.ParseIn(j.Schedule, j.TimeZone)
	if err != nil {
		return fmt.Errorf("job %s: %w", jobName, err)
	}
	sch := &scheduler{schedule: s, fireFunc: func(ctx context.Context, at time.Time) {
		sum, err := e.Trigger(ctx, jobName, at, false)
		if onTick != nil {
			onTick(sum, err)
		}
	}}
	return sch.run(ctx)
}

// SortedItemNames returns j.ItemNames sorted by name: every item a run of
// j has, in the order operators read them (listings, carry-over).
func SortedItemNames(j baton.Job) []string {
	names := jobspec.ItemNames(j)
	sort.Strings(names)
	return names
}

// WaitSettled polls the ledger until the tick's run is complete or partial
// (settling it when its items are all terminal), or ctx ends. It returns
// the run and its items.
func (e *Runtime) WaitSettled(ctx context.Context, jobName string, nominal time.Time, every time.Duration) (ledger.Run, []ledger.Item, error) {
	if every <= 0 {
		every = 50 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		run, err := e.Coordinator.Settle(ctx, jobName, nominal)
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return ledger.Run{}, nil, err
		}
		if err == nil && run.State.Finished() {
			items, err := e.backend.Ledger.ListItems(ctx, run.ID)
			return run, items, err
		}
		select {
		case <-ctx.Done():
			if err == nil {
				items, _ := e.backend.Ledger.ListItems(context.WithoutCancel(ctx), run.ID)
				return run, items, fmt.Errorf("run %s not settled: %w", run.ID, ctx.Err())
			}
			return ledger.Run{}, nil, fmt.Errorf("tick %s@%s not opened: %w", jobName, nominal.UTC().Format(time.RFC3339), ctx.Err())
		case <-t.C:
		}
	}
}

// Catalog returns the runtime's catalog.
func (e *Runtime) Catalog() *baton.Catalog { return e.opts.Catalog }

// Owner is the prefix of the runtime's lease and item owners
// (Options.Owner, or host/pid).
func (e *Runtime) Owner() string { return e.opts.Owner }

// Now reads the runtime's clock (Options.NowFunc, else time.Now).
func (e *Runtime) Now() time.Time { return e.now() }
