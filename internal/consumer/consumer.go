package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/telemetry"
)

// Item statuses reported in MessageOutcome.Status.
const (
	StatusSucceeded  = "succeeded"   // processed and completed now
	StatusDuplicate  = "duplicate"   // already terminal: acknowledged without processing
	StatusHeld       = "held"        // held by a live owner, or a derived item's inputs are not ready
	StatusFailed     = "failed"      // FAILED (retried), or a store error
	StatusDead       = "dead"        // DEAD now (permanent error or attempts exhausted)
	StatusCancelled  = "cancelled"   // cancelled now (a derived item whose input ended without success), or while its processor ran
	StatusMalformed  = "malformed"   // undecodable, unknown job or asset
	StatusUnvouched  = "unvouched"   // the ledger does not vouch for it: no run, a generation never opened, a future tick, a fence the run cannot account for
	StatusSuperseded = "superseded"  // of a generation a forced replay superseded: acknowledged, nothing done
	StatusNotStarted = "not_started" // too close to the deadline to start
	StatusRequeued   = "requeued"    // held by a live claim at its last receive: sent again as a new message, acknowledged
	StatusOverBudget = "over_budget" // not started: its run's RunBudget had passed; CANCELLED with the reason, acknowledged
	StatusReleased   = "released"    // given back at a graceful stop (Consumer.Stop): not started, or its claim released; redelivered
	StatusLimited    = "limited"     // not started: its key of a keyed PerItem limit was busy (ErrLimited); redelivered later, no attempt spent
	// StatusExpanded and StatusRan (shard messages) are in expand.go and bulk.go.
)

// Consumer processes item messages. Its fields are set once; Handle may be
// called concurrently.
type Consumer struct {
	Ledger ledger.Store
	// Queue is where derived items are enqueued, and held messages sent
	// again at their last receive (the work queue).
	Queue queue.Sender
	// DeadLetter, optional, receives malformed messages and messages that
	// reached MaxReceives, with the reason in the baton-error attribute.
	DeadLetter queue.Sender
	// MaxReceives: a message still failing at this receive count is
	// forwarded to DeadLetter (if set) and acknowledged; one whose item is
	// held by a live claim, waits on a busy key or is a derived item whose
	// inputs are not ready is sent again to Queue instead (see the package
	// documentation). 0: never (the queue's own redrive policy
	// dead-letters it, without a reason).
	MaxReceives int
	Jobs        *baton.Catalog
	// Effects is the store behind each task's Effects (baton.Task), on the
	// same backend as the ledger. Required.
	Effects effect.Store
	// Owner identifies this process or invocation in claims; it must be
	// unique among concurrent consumers.
	Owner   string
	NowFunc func() time.Time // nil: time.Now
	Logger  *slog.Logger     // nil: discard
	// Runs, optional, keeps the runs read to vouch for messages across
	// batches (share one per process); nil: every message reads its run.
	Runs *RunCache
	// Pages, optional, keeps the stored pages of run-time item lists read
	// to check items against (share one per process); nil: every message
	// of such a job reads its page.
	Pages *PageCache
	// RateLimits keeps the counters of the jobs' shared rate limits
	// (baton.RateLimit); nil: Task.Wait fails with ErrNoRateLimits.
	RateLimits ratelimit.Store
	// ChainsFunc, optional, starts the chained runs of a run this
	// consumer saw finished (baton.Chain; coordinator.StartChains): called
	// for a job with chains each time the settling of an item finds its
	// run finished. nil: the job's next trigger starts them.
	ChainsFunc func(ctx context.Context, run ledger.Run) error
	// Stop, optional, ends a graceful shutdown's grace period: once it is
	// closed, no message is started any more and a processor still running
	// has its context cancelled. A message not started, and one whose
	// processor then returns an error, is given back without a verdict:
	// its claim is released (ledger Release: any consumer may claim the
	// item once the skew allowance has passed) and it is reported failed
	// with status released, never dead-lettered, so that the queue
	// delivers it again.
	// A processor that returns a result despite the stop completes as
	// usual. The ledger writes still run under Handle's ctx.
	Stop <-chan struct{}
	// ItemsFunc, optional, names the items of a shard message's range
	// (hierarchical fan-out); nil: CatalogItems.
	ItemsFunc ItemsFunc
	// RetryDelay, optional, is how long a failed message stays hidden
	// when nothing names its delay (a job's baton.RetryPolicy, a
	// processor's baton.RetryAfter). 0: as the queue hides it (the rest
	// of its visibility timeout). A delay is applied when Queue is a
	// queue.VisibilityChanger for the batch's queue; Failure.Delay says
	// which was.
	RetryDelay time.Duration
	// Telemetry is the tracer and meter the items record with (a span
	// per delivery, its steps as child spans; counts by outcome); nil:
	// the global OpenTelemetry providers.
	Telemetry *telemetry.Telemetry
}

// Result is the verdict on a batch. Every message not in Failed may be
// acknowledged.
type Result struct {
	// Failed are the messages to leave in the queue for redelivery.
	Failed []Failure
	// DeadLettered are the messages forwarded to DeadLetter with their
	// reason; they are acknowledged.
	DeadLettered []Failure
	// Items has one outcome per message, in the batch's order.
	Items []MessageOutcome
}

// Outcomes returns the outcome of every message of the batch and of every
// item run in place: each message's outcome (Items), followed, for a
// shard message of a bulk job, by its items' (MessageOutcome.Ran). What
// counts items (metrics, logs) reads these; an item run in place has the
// message id "<shard message id>/<item>".
func (r Result) Outcomes() []MessageOutcome {
	out := make([]MessageOutcome, 0, len(r.Items))
	for _, o := range r.Items {
		out = append(out, o)
		out = append(out, o.Ran...)
	}
	return out
}

// Failure is one message's failure or dead-letter reason.
type Failure struct {
	MessageID string
	// Delay is how long the failed message was hidden before its next
	// delivery (see Consumer.RetryDelay); 0 when it was left as the
	// queue hides it.
	Delay time.Duration
	Err   error
}

// MessageOutcome is what happened to one message of a batch: the
// consumer's per-message result.
type MessageOutcome struct {
	MessageID string
	Key       string // the item's idempotency key ("" when malformed)
	Asset     string
	Status    string // one of the Status constants
	Attempt   int    // the item's attempt as seen by this delivery
	Fence     int64  // the fence the message carries (0 when malformed)
	// Processing is how long the processor ran.
	Processing time.Duration
	// TickToDone is from the tick's nominal time to the completion
	// (succeeded only): the staleness of the result.
	TickToDone time.Duration
	// Ran, for a shard message of a bulk job (status ran), are the
	// outcomes of its items, run here, in the range's order; HandedOver
	// is how many of them were sent as item messages (they did not end
	// here).
	Ran        []MessageOutcome
	HandedOver int
	// Limit, for a message given back by a busy key (status limited), is
	// the name of the rate limit it waits on (never its key: a key is
	// data).
	Limit string
}

// Handle processes msgs, up to the job's Limits.Concurrency at once (the
// largest among the batch's jobs), and reports what to redeliver. The
// deadline is the invocation's (zero: none besides ctx). Handle never
// panics on a bad message; a processor that panics is treated as having
// returned an error.
func (c *Consumer) Handle(ctx context.Context, deadline time.Time, msgs []queue.Delivery) Result {
	start := c.now()
	ds := make([]*delivery, len(msgs))
	decoded := make([]delivery, len(msgs)) // one allocation for the batch
	parallel := 1
	for i, m := range msgs {
		ds[i] = &decoded[i]
		c.decode(ds[i], m)
		if ds[i].err == nil && ds[i].job.Limits.Concurrency > parallel {
			parallel = ds[i].job.Limits.Concurrency
		}
	}

	verdicts := make([]verdict, len(ds))
	ended := &endedItems{}
	slots := make(chan struct{}, parallel) // a batch's bulk items run parallel at once, as its messages do
	// The messages a ledger that claims many items at once takes in
	// waves (see batch.go); the others one by one.
	var waved []int
	bc, _ := c.Ledger.(ledger.BatchClaimer)
	var g errgroup.Group // a message's failure is its verdict: none stops the others
	g.SetLimit(parallel)
	for i, d := range ds {
		d.ended, d.slots = ended, slots
		if bc != nil && batchable(d) {
			waved = append(waved, i)
			continue
		}
		g.Go(func() error {
			verdicts[i] = c.handle(ctx, deadline, d)
			return nil
		})
	}
	_ = g.Wait()
	for lo := 0; lo < len(waved); lo += parallel {
		wave := waved[lo:min(len(waved), lo+parallel)]
		wds := make([]*delivery, len(wave))
		for k, i := range wave {
			wds[k] = ds[i]
		}
		for k, v := range c.runWave(ctx, deadline, wds, bc) {
			verdicts[wave[k]] = v
		}
	}
	// Before any message is acknowledged: the batch's items that ended
	// settle their shards, each shard once (see settle).
	c.settleEnded(ctx, ended.take(), parallel)
	return c.result(ctx, start, msgs, parallel, verdicts)
}

// HandleMalformed settles one delivery that never became a message: the
// envelope it came in (a push request's) is unusable, for reason, and no
// redelivery can change that. It is treated as a malformed message: its
// body (the whole envelope) is forwarded to DeadLetter with the reason
// (wrapping message.ErrMalformed) and acknowledged; with DeadLetter unset,
// or when forwarding fails, it is reported failed, to be delivered again.
func (c *Consumer) HandleMalformed(ctx context.Context, d queue.Delivery, reason error) Result {
	start := c.now()
	err := fmt.Errorf("message %s: %w: %v", d.MessageID, message.ErrMalformed, reason)
	v := c.handle(ctx, time.Time{}, &delivery{d: d, err: err})
	return c.result(ctx, start, []queue.Delivery{d}, 1, []verdict{v})
}

// result is the Result of a batch's verdicts (verdicts[i] is msgs[i]'s),
// logged; a failed message is hidden for its retry delay (delay).
func (c *Consumer) result(ctx context.Context, start time.Time, msgs []queue.Delivery, parallel int, verdicts []verdict) Result {
	n := len(msgs)
	log := c.logger()
	var res Result
	counts := map[string]int{}
	for i, v := range verdicts {
		res.Items = append(res.Items, v.outcome)
		counts[v.outcome.Status]++
		switch {
		case v.deadLettered:
			res.DeadLettered = append(res.DeadLettered, Failure{MessageID: v.outcome.MessageID, Err: v.err})
		case v.err != nil:
			res.Failed = append(res.Failed, c.delay(ctx, msgs[i], v))
		}
	}
	attrs := []any{
		slog.String("phase", "batch"),
		slog.Int("messages", n),
		slog.Int("failed", len(res.Failed)),
		slog.Int("dead_lettered", len(res.DeadLettered)),
		slog.Int("parallel", parallel),
		slog.Duration("duration", c.now().Sub(start)),
	}
	for s, n := range counts {
		attrs = append(attrs, slog.Int(s, n))
	}
	log.InfoContext(ctx, "batch handled", attrs...)
	return res
}

func (c *Consumer) now() time.Time {
	if c.NowFunc != nil {
		return c.NowFunc()
	}
	return time.Now()
}

// nowFunc is the consumer's clock as a function: the same as now, without
// the allocation of the method value c.now.
func (c *Consumer) nowFunc() func() time.Time {
	if c.NowFunc != nil {
		return c.NowFunc
	}
	return time.Now
}

func (c *Consumer) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return discardLogger
}

// discardLogger is the logger of a consumer without one.
var discardLogger = slog.New(slog.DiscardHandler)
