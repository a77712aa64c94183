package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// delivery is a received message with what decoding found.
type delivery struct {
	d   queue.Delivery
	msg message.Message
	key ledger.ItemKey
	job baton.Job
	err error // why the message cannot be processed (malformed, unknown job or asset)
}

// verdict is the handling of one message.
type verdict struct {
	outcome      MessageOutcome
	err          error // nil: acknowledge
	deadLettered bool  // forwarded to the dead-letter queue (and so acknowledged)
}

// decode parses the message and resolves its job and asset.
func (c *Consumer) decode(d queue.Delivery) *delivery {
	out := &delivery{d: d}
	msg, err := message.Decode(d.Body)
	if err != nil {
		out.err = fmt.Errorf("message %s: %w", d.MessageID, err)
		return out
	}
	key, err := msg.ItemKey()
	if err != nil { // DecodeMessage validated it already
		out.err = fmt.Errorf("message %s: %w: %v", d.MessageID, message.ErrMalformed, err)
		return out
	}
	out.msg, out.key = msg, key
	j, err := c.Jobs.Lookup(key.Run.Job)
	if err != nil {
		out.err = fmt.Errorf("message %s (key %s): %w", d.MessageID, msg.Key, err)
		return out
	}
	if !j.HasItem(key.Asset) {
		out.err = fmt.Errorf("message %s (key %s): %w: job %s has no asset or derived item %q",
			d.MessageID, msg.Key, ErrUnknownAsset, j.Name, key.Asset)
		return out
	}
	out.job = j
	return out
}

// ErrUnknownAsset matches the error for a message whose asset is neither in
// its job's catalog nor one of its derived items.
var ErrUnknownAsset = errors.New("unknown asset")

// handle runs one message and applies the dead-letter policy to its verdict.
func (c *Consumer) handle(ctx context.Context, deadline time.Time, d *delivery) verdict {
	var v verdict
	if d.err != nil {
		v = verdict{outcome: MessageOutcome{MessageID: d.d.MessageID, Key: d.msg.Key, Asset: d.key.Asset, Status: StatusMalformed}, err: d.err}
		c.logger().WarnContext(ctx, "message rejected", slog.String("phase", "decode"),
			slog.String("message_id", d.d.MessageID), slog.Any("error", d.err))
		if c.DeadLetter == nil {
			return v
		}
	} else {
		v = c.run(ctx, deadline, d)
		if v.err == nil || c.DeadLetter == nil || c.MaxReceives <= 0 || d.d.ReceiveCount < c.MaxReceives {
			return v
		}
	}
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

// run claims, processes and settles one decoded message.
func (c *Consumer) run(ctx context.Context, deadline time.Time, d *delivery) verdict {
	log := c.logger().With(slog.String("key", d.msg.Key), slog.String("message_id", d.d.MessageID))
	lim := d.job.Limits
	out := MessageOutcome{MessageID: d.d.MessageID, Key: d.msg.Key, Asset: d.key.Asset}
	fail := func(status string, err error) verdict {
		out.Status = status
		return verdict{outcome: out, err: err}
	}
	ack := func(status string) verdict {
		out.Status = status
		return verdict{outcome: out}
	}

	now := c.now()
	if err := ctx.Err(); err != nil {
		return fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err))
	}
	if !deadline.IsZero() && !now.Before(deadline.Add(-lim.DeadlineMargin)) {
		return fail(StatusNotStarted, fmt.Errorf("%s not started: %s left before the deadline, margin %s",
			d.key, deadline.Sub(now), lim.DeadlineMargin))
	}

	// A derived item runs only once its inputs SUCCEEDED; their results are
	// read before the claim, so that an early message spends no attempt.
	var inputs map[string][]byte
	if def, ok := d.job.DerivedItem(d.key.Asset); ok {
		items, err := c.Ledger.ListItems(ctx, d.key.Run)
		if err != nil {
			return fail(StatusFailed, fmt.Errorf("%s: list inputs: %w", d.key, err))
		}
		states := make(map[string]ledger.ItemState, len(items))
		results := make(map[string][]byte, len(items))
		for _, it := range items {
			states[it.Key.Asset], results[it.Key.Asset] = it.State, it.Result
		}
		if states[d.key.Asset].Terminal() {
			return ack(StatusDuplicate)
		}
		switch verdict, reason := fanin.Inputs(def, states); verdict {
		case fanin.Doomed:
			_, err := c.Ledger.Cancel(ctx, ledger.CancelParams{Key: d.key, Reason: reason, Now: now})
			if errors.Is(err, ledger.ErrTerminal) {
				return ack(StatusDuplicate)
			}
			if err != nil {
				return fail(StatusFailed, fmt.Errorf("%s: cancel (%s): %w", d.key, reason, err))
			}
			log.InfoContext(ctx, "derived item cancelled", slog.String("phase", "fan-in"), slog.String("reason", reason))
			return ack(StatusCancelled)
		case fanin.Waiting:
			return fail(StatusHeld, fmt.Errorf("%s: inputs not ready: %s", d.key, waitingOn(def, states)))
		}
		inputs = make(map[string][]byte, len(def.Inputs))
		for _, in := range def.Inputs {
			inputs[in] = results[in]
		}
	}

	// The claim, and the processor's context, end before the invocation's
	// deadline minus the margin, which leaves the margin for recording the
	// verdict: an item is never half-run when the invocation is cut off.
	leaseUntil := now.Add(lim.ItemLease)
	if end := deadline.Add(-lim.DeadlineMargin); !deadline.IsZero() && end.Before(leaseUntil) {
		leaseUntil = end
	}
	item, err := c.Ledger.Claim(ctx, ledger.ClaimParams{
		Key: d.key, Owner: c.Owner, LeaseUntil: leaseUntil, Fence: d.msg.Fence,
		MaxAttempts: lim.MaxAttempts, Skew: lim.ClockSkew, Now: now,
	})
	out.Attempt = item.Attempt
	switch {
	case errors.Is(err, ledger.ErrTerminal):
		log.DebugContext(ctx, "item already terminal", slog.String("phase", "claim"), slog.String("state", string(item.State)))
		if err := c.fanIn(ctx, d, item.State); err != nil {
			return fail(StatusDuplicate, err)
		}
		return ack(StatusDuplicate)
	case errors.Is(err, ledger.ErrHeld):
		return fail(StatusHeld, fmt.Errorf("claim %s: %w by %s until %s", d.key, err, item.Owner, item.LeaseUntil.UTC().Format(time.RFC3339Nano)))
	case err != nil:
		return fail(StatusFailed, fmt.Errorf("claim %s: %w", d.key, err))
	}

	task := baton.Task{
		Key: d.key, Asset: d.key.Asset, Nominal: d.key.Run.Nominal,
		Attempt: item.Attempt, Fence: d.msg.Fence, Inputs: inputs,
		Effects: effect.Bind(c.Effects, d.key.Run.Job, d.key.Run.Generation, item.Attempt, c.now),
	}
	pctx, cancel := context.WithTimeout(ctx, leaseUntil.Sub(now))
	started := c.now()
	result, perr := safeProcess(pctx, d.job.Processor, task)
	cancel()
	done := c.now()
	out.Processing = done.Sub(started)

	if perr == nil {
		if _, err := c.Ledger.Complete(ctx, ledger.CompleteParams{
			Key: d.key, Owner: c.Owner, Attempt: item.Attempt, Result: result, Now: done,
		}); err != nil {
			log.WarnContext(ctx, "completion rejected", slog.String("phase", "complete"),
				slog.Int("attempt", item.Attempt), slog.Any("error", err))
			return fail(StatusFailed, fmt.Errorf("complete %s attempt %d: %w", d.key, item.Attempt, err))
		}
		out.TickToDone = done.Sub(d.key.Run.Nominal)
		log.InfoContext(ctx, "item succeeded", slog.String("phase", "process"), slog.Int("attempt", item.Attempt),
			slog.Duration("processing", out.Processing), slog.Duration("tick_to_done", out.TickToDone))
		if err := c.fanIn(ctx, d, ledger.ItemSucceeded); err != nil {
			return fail(StatusSucceeded, err)
		}
		return ack(StatusSucceeded)
	}

	failed, err := c.Ledger.Fail(ctx, ledger.FailParams{
		Key: d.key, Owner: c.Owner, Attempt: item.Attempt, Reason: perr.Error(),
		Permanent: baton.IsPermanent(perr), MaxAttempts: lim.MaxAttempts, Now: done,
	})
	if err != nil {
		log.WarnContext(ctx, "failure not recorded", slog.String("phase", "fail"),
			slog.Int("attempt", item.Attempt), slog.Any("processor_error", perr), slog.Any("error", err))
		return fail(StatusFailed, fmt.Errorf("%s attempt %d: %w (and recording it failed: %v)", d.key, item.Attempt, perr, err))
	}
	if failed.State == ledger.ItemDead {
		log.WarnContext(ctx, "item dead", slog.String("phase", "process"), slog.Int("attempt", item.Attempt),
			slog.Bool("permanent", baton.IsPermanent(perr)), slog.Any("error", perr))
		if err := c.fanIn(ctx, d, ledger.ItemDead); err != nil {
			return fail(StatusDead, err)
		}
		return ack(StatusDead)
	}
	log.InfoContext(ctx, "item failed", slog.String("phase", "process"), slog.Int("attempt", item.Attempt), slog.Any("error", perr))
	return fail(StatusFailed, fmt.Errorf("%s attempt %d: %w", d.key, item.Attempt, perr))
}

// fanIn runs the fan-in check for the derived items that take d's asset,
// once that asset is terminal. It is a no-op for other states and for
// assets nobody depends on.
func (c *Consumer) fanIn(ctx context.Context, d *delivery, state ledger.ItemState) error {
	if !state.Terminal() || len(d.job.DependentsOf(d.key.Asset)) == 0 {
		return nil
	}
	res, err := fanin.Check(ctx, fanin.Params{
		Ledger: c.Ledger, Queue: c.Queue, Def: d.job, Run: d.key.Run,
		Fence: d.msg.Fence, Input: d.key.Asset, Now: c.now(),
	})
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
