package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/redact"
	"github.com/batonhq/baton/internal/telemetry"
)

// delivery is a received message with what decoding found.
type delivery struct {
	d   queue.Delivery
	msg message.Message
	key ledger.ItemKey
	job baton.Job
	// parts is the item partitions of the run's generation
	// (ledger.Run.Partitions), once the vouch has read it.
	parts int
	err   error // why the message cannot be processed (malformed, unknown job or asset)
	// ended, set by Handle, collects the batch's items that ended, whose
	// shards Handle settles once the batch is done; nil: each settles as
	// it ends.
	ended *endedItems
	// slots, set by Handle, bounds the items of the batch's bulk shards
	// running at once (runShard) to the batch's parallelism; nil: each
	// shard runs its job's Limits.Concurrency at once.
	slots chan struct{}
}

// verdict is the handling of one message.
type verdict struct {
	outcome      MessageOutcome
	err          error // nil: acknowledge
	deadLettered bool  // forwarded to the dead-letter queue (and so acknowledged)
	poison       bool  // err says why no receive will ever succeed: dead-letter it now
	// delay, for a failed attempt with attempts left, is how long its
	// message waits before the next delivery (see retryDelay); 0: the
	// consumer's default.
	delay time.Duration
}

// decode parses the message d and resolves its job and asset, into out.
func (c *Consumer) decode(out *delivery, d queue.Delivery) {
	*out = delivery{d: d}
	msg, key, err := message.DecodeKey(d.Body)
	if err != nil {
		out.err = fmt.Errorf("message %s: %w", d.MessageID, err)
		return
	}
	out.msg, out.key = msg, key
	j, err := c.Jobs.Lookup(key.Run.Job)
	if err != nil {
		out.err = fmt.Errorf("message %s (key %s): %w", d.MessageID, msg.Key, err)
		return
	}
	paged := jobspec.RunTime(j) || key.Run.Submitted() // the run's items are its stored pages
	switch {
	case paged && msg.IsShard() && !msg.PageShard():
		out.err = fmt.Errorf("message %s (key %s): %w: the run's items are a stored list (a run-time list or a submission), and a shard message (version %d) names positions of a catalog, which the run has not",
			d.MessageID, msg.Key, message.ErrMalformed, msg.Version)
		return
	case !paged && msg.PageShard():
		out.err = fmt.Errorf("message %s (key %s): %w: job %s has constant items, and the message is a page shard of a stored item list (version %d)",
			d.MessageID, msg.Key, message.ErrMalformed, j.Name, msg.Version)
		return
	case paged && !msg.Paged() && !msg.PageShard():
		out.err = fmt.Errorf("message %s (key %s): %w: the run's items are a stored list (a run-time list or a submission), and the message names no page of it (version %d)",
			d.MessageID, msg.Key, message.ErrMalformed, msg.Version)
		return
	case !paged && msg.Paged():
		out.err = fmt.Errorf("message %s (key %s): %w: job %s has constant items, and the message names a page of a stored item list",
			d.MessageID, msg.Key, message.ErrMalformed, j.Name)
		return
	case !paged && !j.HasItem(key.Asset):
		out.err = fmt.Errorf("message %s (key %s): %w: job %s has no asset or derived item %q",
			d.MessageID, msg.Key, ErrUnknownAsset, j.Name, key.Asset)
		return
	}
	out.job = j
}

// ErrUnknownAsset matches the error for a message whose asset is neither in
// its job's catalog nor one of its derived items.
var ErrUnknownAsset = errors.New("unknown asset")

// handle runs one message and applies the dead-letter policy to its
// verdict, under the message's span (startItem).
func (c *Consumer) handle(ctx context.Context, deadline time.Time, d *delivery) verdict {
	ctx, span := c.startItem(ctx, d)
	v := c.handleMessage(ctx, deadline, d)
	c.endItem(ctx, span, d, v)
	return v
}

// handleMessage is handle's work.
func (c *Consumer) handleMessage(ctx context.Context, deadline time.Time, d *delivery) verdict {
	if d.err != nil {
		v := verdict{outcome: MessageOutcome{MessageID: d.d.MessageID, Key: d.msg.Key, Asset: d.key.Asset, Status: StatusMalformed}, err: d.err}
		c.logger().WarnContext(ctx, "message rejected", slog.String("phase", "decode"),
			slog.String("message_id", d.d.MessageID), slog.Any("error", d.err))
		if c.DeadLetter == nil {
			return v
		}
		return c.deadLetter(ctx, d, v)
	}
	return c.conclude(ctx, d, c.run(ctx, deadline, d))
}

// conclude applies the dead-letter policy to the verdict v of a decoded
// message's run.
func (c *Consumer) conclude(ctx context.Context, d *delivery, v verdict) verdict {
	exhausted := c.MaxReceives > 0 && d.d.ReceiveCount >= c.MaxReceives
	// A message whose item did not run here through no fault of its
	// own (held by a live claim, a busy key, inputs pending, not
	// started before the deadline, given back at a stop) is sent
	// again as a new message near its last receive, never left to be
	// dead-lettered: one receive early, so that a batch killed at that
	// receive still leaves the consumer the last one.
	if v.err != nil && c.nearLastReceive(d.d) && notItsFault(v) {
		if rv, ok := c.requeue(ctx, d, v); ok {
			return rv
		}
	}
	if v.outcome.Status == StatusReleased {
		// Given back at a stop: the item is claimable, and only a
		// redelivery can finish it.
		return v
	}
	if v.err == nil || c.DeadLetter == nil || !(v.poison || exhausted) {
		return v
	}
	return c.deadLetter(ctx, d, v)
}

// deadLetter forwards d to the dead-letter queue with v's reason.
func (c *Consumer) deadLetter(ctx context.Context, d *delivery, v verdict) verdict {
	if err := c.forward(ctx, d.d, v.err); err != nil {
		v.err = fmt.Errorf("%w (and forwarding to the dead-letter queue failed: %v)", v.err, err)
		return v
	}
	v.deadLettered = true
	c.logger().WarnContext(ctx, "message dead-lettered", slog.String("phase", "dead-letter"),
		slog.String("message_id", d.d.MessageID), slog.String("key", d.msg.Key),
		slog.Int("receive_count", d.d.ReceiveCount), slog.Any("error", v.err))
	return v
}

// nearLastReceive reports whether d is at the receive before its last, or
// its last (MaxReceives).
func (c *Consumer) nearLastReceive(d queue.Delivery) bool {
	return c.MaxReceives > 1 && d.ReceiveCount >= c.MaxReceives-1
}

// notItsFault reports whether v failed its message for a reason no
// redelivery of it is to blame for: the item held by another live claim,
// its key of a keyed limit busy, a derived item's inputs pending, not
// started before the deadline or given back at a stop. A bad limit key is
// the message's (or its job's) fault: it is dead-lettered.
func notItsFault(v verdict) bool {
	switch {
	case errors.Is(v.err, baton.ErrLimitKey), errors.Is(v.err, baton.ErrUnknownLimit):
		return false
	case errors.Is(v.err, ledger.ErrHeld), errors.Is(v.err, ErrLimited), errors.Is(v.err, ErrInputsPending):
		return true
	}
	return v.outcome.Status == StatusNotStarted || v.outcome.Status == StatusReleased
}

// requeue sends d again as a new message (receive count 1) and
// acknowledges it, for a message whose item is held by a live claim at its
// last receive (or, never claimed, waits on a busy key: ErrLimited, or is
// a derived item waiting on its inputs: ErrInputsPending, which is not
// poison, only early). Dead-lettering it could lose the item: the claim may be a
// dead consumer's, taken from this very message (a queue may deliver one
// message twice at once, and a poller that retries a held message sooner
// than its visibility timeout spends its receives while the claim lasts),
// and then no other message would finish the item. The claim ends within
// the job's ItemLease, so the new message finds the item claimable or
// terminal. ok is false when the send failed: v stands, with that error.
func (c *Consumer) requeue(ctx context.Context, d *delivery, v verdict) (verdict, bool) {
	if c.Queue == nil {
		return v, false
	}
	msg := queue.Message{Body: d.d.Body, Attributes: maps.Clone(d.d.Attributes)}
	if _, err := queue.SendAll(ctx, c.Queue, []queue.Message{msg}, nil); err != nil {
		c.logger().WarnContext(ctx, "sending a held message again failed", slog.String("phase", "requeue"),
			slog.String("message_id", d.d.MessageID), slog.String("key", d.msg.Key), slog.Any("error", err))
		v.err = fmt.Errorf("%w (and sending it again failed: %v)", v.err, err)
		return v, false
	}
	c.logger().InfoContext(ctx, "held at its last receive; sent again", slog.String("phase", "requeue"),
		slog.String("message_id", d.d.MessageID), slog.String("key", d.msg.Key),
		slog.Int("receive_count", d.d.ReceiveCount), slog.Any("held", v.err))
	v.outcome.Status, v.err = StatusRequeued, nil
	return v, true
}

// run acts on one decoded message: it gates, claims, processes and records
// it, each step deciding whether the next one runs.
func (c *Consumer) run(ctx context.Context, deadline time.Time, d *delivery) verdict {
	m := c.newRun(deadline, d)
	if d.msg.IsShard() {
		// Near its last receive a bulk shard is expanded rather than run
		// in place: its earlier receives ended without a verdict (their
		// batches cut off or killed while its items ran), and one more
		// such receive would leave every item of it to the queue's
		// redrive. Its items then run from messages of their own.
		if d.job.Bulk && !c.nearLastReceive(d.d) {
			return c.runShard(ctx, deadline, m)
		}
		return c.expand(ctx, deadline, m)
	}
	m.leaseUntil = leaseEnd(jobspec.ItemLease(d.job, d.key.Asset), m.now, m.hardEnd)
	m.limits = newTaskLimiter(c, d.job, d.key, m.leaseUntil)
	m.limits.log = m.log
	// The item's in-flight slots are held until its run here ends.
	defer m.limits.freeAll(context.WithoutCancel(ctx), m.log)
	if v, ok := c.gate(ctx, deadline, m); !ok {
		return v
	}
	if len(d.job.RateLimits) > 0 {
		if v, ok := c.itemLimits(ctx, deadline, m); !ok {
			return v
		}
		// The wait took time: the claim starts now, and so do its holds.
		m.now = c.now()
		m.leaseUntil = leaseEnd(jobspec.ItemLease(d.job, d.key.Asset), m.now, m.hardEnd)
		if err := m.limits.renew(ctx, m.leaseUntil); err != nil {
			return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err))
		}
	}
	if v, ok := c.claim(ctx, m); !ok {
		return v
	}
	result, done, perr := c.process(ctx, m)
	return c.record(ctx, m, result, done, perr)
}

// newRun starts d's way through run's steps, now.
func (c *Consumer) newRun(deadline time.Time, d *delivery) *messageRun {
	m := &messageRun{}
	c.initRun(m, deadline, d)
	return m
}

// initRun is newRun into m (a wave's runs are allocated together).
func (c *Consumer) initRun(m *messageRun, deadline time.Time, d *delivery) {
	*m = messageRun{
		d:   d,
		out: MessageOutcome{MessageID: d.d.MessageID, Key: d.msg.Key, Asset: d.key.Asset, Fence: d.msg.Fence},
		log: c.itemLogger(d),
		now: c.now(),
	}
	if !deadline.IsZero() {
		m.hardEnd = deadline.Add(-d.job.Limits.DeadlineMargin)
	}
}

// itemLogger is the logger of d's steps: the consumer's, with the
// message's key and id; the consumer's own when it discards everything
// (nothing to add them to).
func (c *Consumer) itemLogger(d *delivery) *slog.Logger {
	log := c.logger()
	if log.Handler() == slog.DiscardHandler {
		return log
	}
	return log.With(slog.String("key", d.msg.Key), slog.String("message_id", d.d.MessageID))
}

// messageRun is one message on its way through run's steps.
type messageRun struct {
	d   *delivery
	out MessageOutcome // filled in as the steps go
	log *slog.Logger
	now time.Time // when run started: the gate's and the claim's time
	// leaseUntil is when the claim ends unless renewed by a heartbeat.
	leaseUntil time.Time
	// hardEnd is the invocation's deadline less the job's margin, which no
	// heartbeat extends a claim past; zero: no deadline.
	hardEnd time.Time
	inputs  map[string][]byte // a derived item's inputs' results (gate)
	page    *ledger.Page      // the stored page that holds the item, for a run-time list (gate)
	payload []byte            // the item's payload, from its page (gate)
	parent  ledger.RunID      // the run whose finish started this one (a chain), from its page (gate)
	run     ledger.Run        // the run as the vouch read it (gate)
	item    ledger.Item       // the item as claimed (claim)
	ended   error             // why the claim ended the processor's context (process); nil: it did not
	limits  *taskLimiter      // the task's limiter, holding its in-flight slots
}

// fail ends the message's run with status, leaving it to be redelivered.
func (m *messageRun) fail(status string, err error) verdict {
	m.out.Status = status
	return verdict{outcome: m.out, err: err}
}

// ack ends the message's run with status, acknowledging it.
func (m *messageRun) ack(status string) verdict {
	m.out.Status = status
	return verdict{outcome: m.out}
}

// leaseEnd is when a claim taken at now ends: after the item's lease, but
// no later than hardEnd (the invocation's deadline minus the margin, zero
// for none), which leaves the margin for recording the verdict: an item is
// never half-run when the invocation is cut off.
func leaseEnd(lease time.Duration, now, hardEnd time.Time) time.Time {
	leaseUntil := now.Add(lease)
	if !hardEnd.IsZero() && hardEnd.Before(leaseUntil) {
		leaseUntil = hardEnd
	}
	return leaseUntil
}

// gate decides whether the message may be acted on now, before any claim,
// so that a message turned away spends no attempt: not once ctx is done or
// the deadline minus the job's margin has come (not started), only when
// the ledger vouches for it (see vouch), and, for a derived item, only once
// its inputs SUCCEEDED (see gateDerived). ok is false when run stops here
// with v.
func (c *Consumer) gate(ctx context.Context, deadline time.Time, m *messageRun) (v verdict, ok bool) {
	ctx, span := c.stepSpan(ctx, telemetry.SpanVouch)
	defer func() { telemetry.End(span, v.outcome.Status, nil) }()
	d, lim := m.d, m.d.job.Limits
	if err := ctx.Err(); err != nil {
		return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err)), false
	}
	if c.stopped() {
		return m.fail(StatusReleased, fmt.Errorf("%s not started: %w", d.key, ErrStopped)), false
	}
	if !deadline.IsZero() && !m.now.Before(deadline.Add(-lim.DeadlineMargin)) {
		return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %s left before the deadline, margin %s",
			d.key, deadline.Sub(m.now), lim.DeadlineMargin)), false
	}
	if v, ok := c.vouch(ctx, m); !ok {
		return v, false
	}
	if d.msg.Paged() {
		if v, ok := c.member(ctx, m); !ok {
			return v, false
		}
	}
	if b := d.job.RunBudget; b > 0 && !m.now.Before(m.run.OpenedAt.Add(b)) {
		if v, ok := c.overBudget(ctx, m); !ok {
			return v, false
		}
	}
	if def, isDerived := jobspec.DerivedItem(d.job, d.key.Asset); isDerived {
		return c.gateDerived(ctx, m, def)
	}
	return verdict{}, true
}

// overBudget handles a message of a run whose RunBudget has passed: its
// item does not start. An item not started yet (no record), waiting for a
// retry (FAILED) or abandoned by its holder (RUNNING with a lease expired)
// is CANCELLED with the reason, and so are the derived items downstream of
// it; the message is acknowledged (status over_budget). An item held by a
// live claim or already terminal is left to the claim, which says so (ok
// is true: run goes on).
func (c *Consumer) overBudget(ctx context.Context, m *messageRun) (v verdict, ok bool) {
	d, lim := m.d, m.d.job.Limits
	it, err := c.Ledger.GetItem(ctx, d.key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
	case err != nil:
		return m.fail(StatusFailed, fmt.Errorf("%s: read item (run budget passed): %w", d.key, err)), false
	case it.State.Terminal(), it.State == ledger.ItemRunning && m.now.Before(it.LeaseUntil.Add(lim.ClockSkew)):
		return verdict{}, true
	}
	opened := m.run.OpenedAt
	reason := fmt.Sprintf("run budget %s exceeded: not started by %s (run opened %s)", d.job.RunBudget,
		opened.Add(d.job.RunBudget).UTC().Format(time.RFC3339Nano), opened.UTC().Format(time.RFC3339Nano))
	_, err = c.Ledger.Cancel(ctx, ledger.CancelParams{Key: d.key, Reason: reason, Now: m.now})
	if errors.Is(err, ledger.ErrTerminal) {
		return verdict{}, true // ended meanwhile: the claim acknowledges it
	}
	if err != nil {
		return m.fail(StatusFailed, fmt.Errorf("%s: cancel (%s): %w", d.key, reason, err)), false
	}
	m.log.WarnContext(ctx, "item over its run's budget: cancelled, not started", slog.String("phase", "budget"), slog.String("reason", reason))
	if err := c.fanIn(ctx, d, ledger.ItemCancelled, false); err != nil {
		return m.fail(StatusOverBudget, err), false
	}
	c.settle(ctx, m)
	return m.ack(StatusOverBudget), false
}

// gateDerived decides whether the derived item def may run: it reads its
// inputs' states and results from the ledger. An item already terminal is
// a duplicate; one with an input that ended without success is cancelled
// now; one with inputs still to succeed is held (redelivered later).
// Otherwise it keeps the inputs' results in m.inputs for the task.
func (c *Consumer) gateDerived(ctx context.Context, m *messageRun, def baton.Derived) (v verdict, ok bool) {
	d := m.d
	items, err := fanin.ReadItems(ctx, c.Ledger, d.job, d.key.Run, d.parts, append([]string{d.key.Asset}, def.Inputs...))
	if err != nil {
		return m.fail(StatusFailed, fmt.Errorf("%s: read inputs: %w", d.key, err)), false
	}
	states := make(map[string]ledger.ItemState, len(items))
	results := make(map[string][]byte, len(items))
	for _, it := range items {
		states[it.Key.Asset], results[it.Key.Asset] = it.State, it.Result
	}
	if st := states[d.key.Asset]; st.Terminal() {
		// Its dependents are cancelled once it ended without success; a
		// crash before that left this message to do it.
		if st != ledger.ItemSucceeded {
			if err := c.fanIn(ctx, d, st, false); err != nil {
				return m.fail(StatusDuplicate, err), false
			}
		}
		return m.ack(StatusDuplicate), false
	}
	switch verdict, reason := fanin.Inputs(def, states); verdict {
	case fanin.Doomed:
		it, err := c.Ledger.Cancel(ctx, ledger.CancelParams{Key: d.key, Reason: reason, Now: m.now})
		if errors.Is(err, ledger.ErrTerminal) {
			if err := c.fanIn(ctx, d, it.State, false); err != nil {
				return m.fail(StatusDuplicate, err), false
			}
			return m.ack(StatusDuplicate), false
		}
		if err != nil {
			return m.fail(StatusFailed, fmt.Errorf("%s: cancel (%s): %w", d.key, reason, err)), false
		}
		m.log.InfoContext(ctx, "derived item cancelled", slog.String("phase", "fan-in"), slog.String("reason", reason))
		// Down the graph: the items that take this one as input.
		if err := c.fanIn(ctx, d, ledger.ItemCancelled, false); err != nil {
			return m.fail(StatusCancelled, err), false
		}
		c.settle(ctx, m)
		return m.ack(StatusCancelled), false
	case fanin.Waiting:
		return m.fail(StatusHeld, fmt.Errorf("%s: %w: %s", d.key, ErrInputsPending, waitingOn(def, states))), false
	}
	m.inputs = make(map[string][]byte, len(def.Inputs))
	for _, in := range def.Inputs {
		m.inputs[in] = results[in]
	}
	return verdict{}, true
}

// claim decides whether this delivery owns the item: it claims it with the
// message's fence until m.leaseUntil. An item already terminal is a
// duplicate (acknowledged once its fan-in check has run); one held by a
// live owner is held (redelivered later). ok is false when run stops here
// with v; otherwise m.item is the claimed item.
func (c *Consumer) claim(ctx context.Context, m *messageRun) (v verdict, ok bool) {
	sctx, span := c.stepSpan(ctx, telemetry.SpanClaim)
	start := c.now()
	item, err := c.Ledger.Claim(sctx, c.claimParams(m))
	c.claimed(ctx, m.d.job.Name, c.now().Sub(start))
	endClaimSpan(span, item, err)
	return c.claimOutcome(ctx, m, item, err)
}

// claimParams is the claim of m's item by this consumer, at m.now until
// m.leaseUntil.
func (c *Consumer) claimParams(m *messageRun) ledger.ClaimParams {
	d, lim := m.d, m.d.job.Limits
	return ledger.ClaimParams{
		Key: d.key, Owner: c.Owner, LeaseUntil: m.leaseUntil, Fence: d.msg.Fence,
		MaxAttempts: lim.MaxAttempts, Skew: lim.ClockSkew, Now: m.now,
	}
}

// endClaimSpan ends the span of a claim with its outcome (item, err).
func endClaimSpan(span trace.Span, item ledger.Item, err error) {
	if span.IsRecording() && item.Attempt > 0 {
		span.SetAttributes(telemetry.KeyAttempt.Int(item.Attempt))
	}
	switch {
	case errors.Is(err, ledger.ErrTerminal):
		telemetry.End(span, StatusDuplicate, nil)
	case errors.Is(err, ledger.ErrHeld):
		telemetry.End(span, StatusHeld, nil)
	case err != nil:
		telemetry.End(span, StatusFailed, err)
	default:
		telemetry.End(span, "claimed", nil)
	}
}

// claimOutcome reads the outcome of m's claim (item, err); see claim.
func (c *Consumer) claimOutcome(ctx context.Context, m *messageRun, item ledger.Item, err error) (v verdict, ok bool) {
	d := m.d
	m.item, m.out.Attempt = item, item.Attempt
	switch {
	case errors.Is(err, ledger.ErrTerminal):
		m.log.DebugContext(ctx, "item already terminal", slog.String("phase", "claim"), slog.String("state", string(item.State)))
		// The completion that made the item terminal ran the fan-in check.
		// A crash between that completion and the check leaves the message
		// to be redelivered after its visibility timeout: a redelivery
		// (received before) that comes an item lease or more after the
		// completion runs the whole check again. Other copies (a duplicate
		// send, a resumed fan-out's resend, a storm's copies held and
		// retried at once) only cancel doomed derived items, so that a
		// delivery storm does not enqueue them once per copy; the run's
		// settle is the last resort.
		recheck := d.d.ReceiveCount > 1 && !m.now.Before(item.FinishedAt.Add(d.job.Limits.ItemLease))
		if err := c.fanIn(ctx, d, item.State, recheck); err != nil {
			return m.fail(StatusDuplicate, err), false
		}
		if recheck {
			// The same redelivery settles the item's shard again: a crash
			// after the completion, before its settle (or between a
			// shard's mark and the run's finish), is recovered here.
			c.settle(ctx, m)
		}
		return m.ack(StatusDuplicate), false
	case errors.Is(err, ledger.ErrHeld):
		v := m.fail(StatusHeld, fmt.Errorf("claim %s: %w by %s until %s", d.key, err, item.Owner, item.LeaseUntil.UTC().Format(time.RFC3339Nano)))
		// Backing off, up to when the claim can be taken over: a message
		// redelivered every retry delay while a dead consumer's claim
		// lasts would spend its receives into the dead-letter queue.
		v.delay = c.heldDelay(item.LeaseUntil.Add(d.job.Limits.ClockSkew).Sub(m.now), d.d.ReceiveCount)
		return v, false
	case err != nil:
		return m.fail(StatusFailed, fmt.Errorf("claim %s: %w", d.key, err)), false
	}
	return verdict{}, true
}

// process runs the job's processor on the claimed item, under a context
// that ends with the claim (see taskClaim: its lease running out without
// a heartbeat, the item cancelled, the claim lost). It decides nothing: it
// returns the processor's result, when it returned, and its error (a
// panic is an error); m.ended is the claim's cause when the claim ended
// the context.
func (c *Consumer) process(ctx context.Context, m *messageRun) (result []byte, done time.Time, perr error) {
	d, item := m.d, &m.item
	cl, pctx, stop := c.startClaim(ctx, m)
	task := baton.Task{
		Key: d.key, Asset: d.key.Asset, Nominal: d.key.Run.Nominal,
		Attempt: item.Attempt, Fence: d.msg.Fence, Inputs: m.inputs, Payload: m.payload, Parent: m.parent,
		Effects: effect.Bind(c.Effects, d.key.Run.Job, d.key.Run.Generation, item.Attempt, c.nowFunc()),
		Claim:   cl,
		Limiter: m.limits,
		Runs:    runReader{ledger: c.Ledger, jobs: c.Jobs},
	}
	if c.Stop != nil {
		// A stop ends the processor's context with ErrStopped as its
		// cause; record then gives the item back.
		watched := make(chan struct{})
		defer close(watched)
		go func() {
			select {
			case <-c.Stop:
				cl.end(fmt.Errorf("%s attempt %d: %w", d.key, item.Attempt, ErrStopped))
			case <-watched:
			}
		}()
	}
	started := c.now()
	result, perr = safeProcess(pctx, d.job.Processor, task)
	stop()
	m.ended = cl.cause()
	done = c.now()
	m.out.Processing = done.Sub(started)
	return result, done, perr
}

// record writes the processor's verdict under the claim, at done, and
// decides the message's: success completes the item (SUCCEEDED,
// acknowledged); an error fails it, DEAD (acknowledged) when it is
// permanent or the attempts are spent, else FAILED (redelivered). A
// terminal item then gets its fan-in check; a write or check that fails
// leaves the message to be redelivered.
func (c *Consumer) record(ctx context.Context, m *messageRun, result []byte, done time.Time, perr error) (v verdict) {
	ctx, span := c.stepSpan(ctx, telemetry.SpanComplete)
	defer func() { telemetry.End(span, v.outcome.Status, nil) }()
	if errors.Is(m.ended, baton.ErrCancelled) {
		return c.recordCancelled(ctx, m)
	}
	if perr == nil {
		return c.recordSuccess(ctx, m, result, done)
	}
	if c.stopped() {
		return c.release(ctx, m, perr, done)
	}
	return c.recordFailure(ctx, m, perr, done)
}

// ErrStopped matches the reason of a message given back at a stop
// (Consumer.Stop).
var ErrStopped = errors.New("consumer stopping")

func (c *Consumer) stopped() bool {
	if c.Stop == nil {
		return false
	}
	select {
	case <-c.Stop:
		return true
	default:
		return false
	}
}

// release gives the claimed item back without a verdict after the stop
// cut its processor short (perr): the next delivery claims it once the
// job's clock-skew allowance has passed.
// The message is redelivered either way; a release that fails leaves the
// claim to expire with its lease.
func (c *Consumer) release(ctx context.Context, m *messageRun, perr error, done time.Time) verdict {
	d, attempt := m.d, m.item.Attempt
	if _, err := c.Ledger.Release(ctx, ledger.ReleaseParams{Key: d.key, Owner: c.Owner, Attempt: attempt, Now: done}); err != nil {
		m.log.WarnContext(ctx, "release at stop failed; the claim ends with its lease", slog.String("phase", "release"),
			slog.Int("attempt", attempt), slog.Any("processor_error", perr), slog.Any("error", err))
		return m.fail(StatusReleased, fmt.Errorf("%s attempt %d: %w: %v (and releasing it failed: %v)", d.key, attempt, ErrStopped, perr, err))
	}
	m.log.InfoContext(ctx, "item released at stop", slog.String("phase", "release"), slog.Int("attempt", attempt), slog.Any("error", perr))
	return m.fail(StatusReleased, fmt.Errorf("%s attempt %d released: %w: %v", d.key, attempt, ErrStopped, perr))
}

// recordSuccess completes the item with result; see record.
func (c *Consumer) recordSuccess(ctx context.Context, m *messageRun, result []byte, done time.Time) verdict {
	p := c.completeParams(m, result, done)
	_, err := c.Ledger.Complete(ctx, p)
	return c.completed(ctx, m, done, err)
}

// completeParams is the completion of m's claimed item with result at
// done.
func (c *Consumer) completeParams(m *messageRun, result []byte, done time.Time) ledger.CompleteParams {
	return ledger.CompleteParams{Key: m.d.key, Owner: c.Owner, Attempt: m.item.Attempt, Result: result, Now: done}
}

// completed reads the outcome err of m's completion at done; see
// recordSuccess.
func (c *Consumer) completed(ctx context.Context, m *messageRun, done time.Time, err error) verdict {
	d, attempt := m.d, m.item.Attempt
	if err != nil {
		m.log.WarnContext(ctx, "completion rejected", slog.String("phase", "complete"),
			slog.Int("attempt", attempt), slog.Any("error", err))
		return m.fail(StatusFailed, fmt.Errorf("complete %s attempt %d: %w", d.key, attempt, err))
	}
	m.out.TickToDone = done.Sub(d.key.Run.Nominal)
	if m.log.Enabled(ctx, slog.LevelDebug) { // the attributes cost allocations, for every item
		m.log.DebugContext(ctx, "item succeeded", slog.String("phase", "process"), slog.Int("attempt", attempt),
			slog.Duration("processing", m.out.Processing), slog.Duration("tick_to_done", m.out.TickToDone))
	}
	if err := c.fanIn(ctx, d, ledger.ItemSucceeded, true); err != nil {
		return m.fail(StatusSucceeded, err)
	}
	c.settle(ctx, m)
	return m.ack(StatusSucceeded)
}

// recordCancelled acknowledges a message whose item was cancelled while
// the processor ran (the claim saw it and ended the processor's
// context): the item is terminal, whatever the processor returned, and
// its result would be refused. The derived items downstream of it are
// cancelled, and the run settles if it was the last.
func (c *Consumer) recordCancelled(ctx context.Context, m *messageRun) verdict {
	m.log.InfoContext(ctx, "item cancelled while it ran; processor stopped", slog.String("phase", "process"),
		slog.Int("attempt", m.item.Attempt), slog.Any("cause", m.ended))
	if err := c.fanIn(ctx, m.d, ledger.ItemCancelled, false); err != nil {
		return m.fail(StatusCancelled, err)
	}
	c.settle(ctx, m)
	return m.ack(StatusCancelled)
}

// recordFailure fails the item with the processor's error perr; see
// record.
func (c *Consumer) recordFailure(ctx context.Context, m *messageRun, perr error, done time.Time) verdict {
	d, attempt, lim := m.d, m.item.Attempt, m.d.job.Limits
	failed, err := c.Ledger.Fail(ctx, ledger.FailParams{
		// Operators read the reason (status, run reports): no secret in it.
		Key: d.key, Owner: c.Owner, Attempt: attempt, Reason: redact.String(perr.Error()),
		Permanent: baton.IsPermanent(perr), MaxAttempts: lim.MaxAttempts, Now: done,
	})
	if err != nil {
		m.log.WarnContext(ctx, "failure not recorded", slog.String("phase", "fail"),
			slog.Int("attempt", attempt), slog.Any("processor_error", perr), slog.Any("error", err))
		return m.fail(StatusFailed, fmt.Errorf("%s attempt %d: %w (and recording it failed: %v)", d.key, attempt, perr, err))
	}
	if failed.State == ledger.ItemDead {
		m.log.WarnContext(ctx, "item dead", slog.String("phase", "process"), slog.Int("attempt", attempt),
			slog.Bool("permanent", baton.IsPermanent(perr)), slog.Any("error", perr))
		if err := c.fanIn(ctx, d, ledger.ItemDead, true); err != nil {
			return m.fail(StatusDead, err)
		}
		c.settle(ctx, m)
		return m.ack(StatusDead)
	}
	v := m.fail(StatusFailed, fmt.Errorf("%s attempt %d: %w", d.key, attempt, perr))
	v.delay = c.retryDelay(ctx, m, perr)
	m.log.DebugContext(ctx, "item failed", slog.String("phase", "process"), slog.Int("attempt", attempt),
		slog.Duration("retry_in", v.delay), slog.Any("error", perr))
	// The next attempt's earliest time, as delay will hide the message:
	// its own delay, else the consumer's RetryDelay (none: as the queue
	// hides it, not known here).
	if wait := cmp.Or(v.delay, c.RetryDelay); wait > 0 {
		c.noteWait(ctx, m, ledger.NoteWaitParams{Key: d.key, Attempt: attempt, Now: done,
			Wait: ledger.ItemWait{At: done.Add(wait)}})
	}
	return v
}

// fanIn runs the fan-in check for the derived items downstream of d's
// item (which may itself be derived), once that item is terminal; without
// enqueue it only cancels the doomed ones. It is a no-op for other states and for assets nobody depends on.
func (c *Consumer) fanIn(ctx context.Context, d *delivery, state ledger.ItemState, enqueue bool) (err error) {
	if !state.Terminal() || d.msg.Paged() || len(jobspec.DependentsOf(d.job, d.key.Asset)) == 0 {
		return nil // the items of a stored list have no derived items
	}
	ctx, span := c.stepSpan(ctx, telemetry.SpanFanIn)
	defer func() { telemetry.End(span, "", err) }()
	p := fanin.Params{
		Ledger: c.Ledger, Def: d.job, Run: d.key.Run, Partitions: d.parts,
		Fence: d.msg.Fence, Input: d.key.Asset, Now: c.now(),
	}
	if enqueue {
		p.Queue = c.Queue
	}
	res, err := fanin.Check(ctx, p)
	if err != nil {
		c.logger().WarnContext(ctx, "fan-in check failed", slog.String("phase", "fan-in"),
			slog.String("key", d.msg.Key), slog.Any("error", err))
		return fmt.Errorf("after %s %s: %w", d.key, state, err)
	}
	if len(res.Enqueued)+len(res.Cancelled) > 0 {
		c.logger().InfoContext(ctx, "fan-in", slog.String("phase", "fan-in"), slog.String("key", d.msg.Key),
			slog.Any("enqueued", res.Enqueued), slog.Any("cancelled", res.Cancelled))
	}
	return nil
}

// safeProcess calls the processor, turning a panic into an error.
func safeProcess(ctx context.Context, p baton.Processor, t baton.Task) (result []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("processor panicked: %v", r)
		}
	}()
	if p == nil {
		return nil, baton.Permanent(fmt.Errorf("job %s has no processor", t.Key.Run.Job))
	}
	return p.Process(ctx, t)
}

// ErrInputsPending matches the reason of a derived item's message that
// arrived before its inputs all SUCCEEDED (none ended without success):
// it is failed without a claim (status held, no attempt spent), hidden for
// the consumer's RetryDelay, and at its last receive sent again as a new
// message (status requeued) instead of being dead-lettered. It is early,
// not poison: once its inputs have succeeded it runs (or, fan-in having
// enqueued the item meanwhile, is acknowledged as a duplicate); once one
// ends without success it is cancelled.
var ErrInputsPending = errors.New("inputs not ready")

// waitingOn names the inputs of def that have not succeeded yet.
func waitingOn(def baton.Derived, states map[string]ledger.ItemState) string {
	s := ""
	for _, in := range def.Inputs {
		if st := states[in]; st != ledger.ItemSucceeded {
			if st == "" {
				st = "absent"
			}
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%s is %s", in, st)
		}
	}
	return s
}
