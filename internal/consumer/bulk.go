package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// StatusRan is the status of a shard message of a bulk job
// (baton.Job.Bulk) whose items were run here, each to its end or handed
// over as an item message: acknowledged. MessageOutcome.Ran has the
// items' own outcomes.
const StatusRan = "ran"

// handOverTimeout bounds the send of a shard's hand-overs.
const handOverTimeout = 30 * time.Second

// runShard handles a shard message of a bulk job (baton.Job.Bulk): once
// the ledger vouches for it (shardItems, as expand), it runs the items of
// its range here, each through the item path of an item message of its
// own (run: gate, claim, process, record), up to the job's
// Limits.Concurrency at once: in a batch (Handle), the items of all its
// bulk shards share the batch's parallelism, so that an invocation runs
// as many items at once in bulk as it runs messages. Each item that did not end here (its
// verdict would leave an item message to be redelivered: failed with
// attempts left, held by a live claim elsewhere, not started before the
// deadline less the job's margin or at a stop, a store error) is handed
// over: sent as the item message that an expansion would have sent
// (version 1 with the shard's fence; version 2 naming its page, for a
// page shard), which then takes the per-item path. The
// shard message is acknowledged only once every item is terminal or
// handed over; a crash before then leaves it to be redelivered, and the
// redelivery runs the range again: terminal items are duplicates
// (acknowledged without a call of the processor), items held by a live
// claim are handed over, so every item runs to its end once in effect.
// While the items run the shard's message stays hidden: its visibility is
// extended every third of the job's item lease, as heartbeats extend an
// item's. The items that end settle their shards once the batch is done
// (settle): each shard of the range once, not once per item.
func (c *Consumer) runShard(ctx context.Context, deadline time.Time, m *messageRun) verdict {
	d := m.d
	if dl, ok := ctx.Deadline(); ok && (deadline.IsZero() || dl.Before(deadline)) {
		deadline = dl // the context's deadline is the invocation's too
	}
	names, v, ok := c.shardItems(ctx, deadline, m, "run")
	if !ok {
		return v
	}
	stop := c.hideShard(ctx, m, deadline)
	defer stop()

	ended, own := d.ended, d.ended == nil
	if own {
		ended = &endedItems{}
	}
	slots := d.slots
	if slots == nil {
		slots = make(chan struct{}, max(1, d.job.Limits.Concurrency))
	}
	verdicts := make([]verdict, len(names))
	var g errgroup.Group // an item's failure is its verdict: none stops the others
	for i, name := range names {
		slots <- struct{}{}
		g.Go(func() error {
			defer func() { <-slots }()
			it := shardItem(d, name, ended)
			ictx, span := c.startItem(ctx, it)
			verdicts[i] = c.run(ictx, deadline, it)
			c.endItem(ictx, span, it, verdicts[i])
			return nil
		})
	}
	_ = g.Wait()
	if own {
		c.settleEnded(ctx, ended.take(), d.job.Limits.Concurrency)
	}

	var over []queue.Message
	counts := map[string]int{}
	for i, v := range verdicts {
		m.out.Ran = append(m.out.Ran, v.outcome)
		counts[v.outcome.Status]++
		if v.err != nil {
			key := ledger.ItemKey{Run: d.key.Run, Asset: names[i]}
			msg := itemMessage(d.msg, key).QueueMessage()
			// The item's retry delay (a retry policy, RetryAfter, a held
			// claim) goes with it, up to the longest a send can delay.
			if msg.Delay = min(v.delay, queue.MaxSendDelay); v.delay > queue.MaxSendDelay {
				m.log.WarnContext(ctx, "retry delay clamped for the hand-over", slog.String("phase", "bulk"), slog.String("item", names[i]),
					slog.Duration("asked", v.delay), slog.Duration("retry_in", queue.MaxSendDelay))
			}
			over = append(over, msg)
		}
	}
	m.out.HandedOver = len(over)
	if len(over) > 0 {
		// The items handed over at the deadline are sent after their
		// context may have ended (a poller's batch context ends at the
		// deadline): the send outlives it, bounded. Where the invocation
		// is cut off (Lambda), the send is lost with it and the shard's
		// redelivery hands them over.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handOverTimeout)
		defer cancel()
		telemetry.Carry(d.d.Attributes, over) // the items link to the run that sent the shard
		sent, err := queue.SendAll(sctx, c.Queue, over, &queue.SendAllOptions{Parallel: expandParallel})
		if err != nil {
			return m.fail(StatusFailed, fmt.Errorf("%s: handed over %d of %d items not ended here: %w",
				shardName(d.msg), sent, len(over), err))
		}
	}
	attrs := append([]any{slog.String("phase", "bulk"), slog.Int("handed_over", len(over))}, shardAttrs(d.msg)...)
	for s, n := range counts {
		attrs = append(attrs, slog.Int(s, n))
	}
	m.log.InfoContext(ctx, "shard run", attrs...)
	return m.ack(StatusRan)
}

// shardItem is the delivery of the item name of the shard message d, as
// the item message an expansion sends (version 1 with d's fence, or
// version 2 naming its page for a page shard): its
// receive count is the shard's (a redelivered shard's items are
// redelivered items), and it has no receipt handle (the shard's
// visibility is runShard's to extend, not its items' heartbeats').
func shardItem(d *delivery, name string, ended *endedItems) *delivery {
	key := ledger.ItemKey{Run: d.key.Run, Asset: name}
	return &delivery{
		d: queue.Delivery{
			MessageID: d.d.MessageID + "/" + name, ReceiveCount: d.d.ReceiveCount, SentAt: d.d.SentAt,
			Attributes: d.d.Attributes,
		},
		msg: itemMessage(d.msg, key), key: key, job: d.job, ended: ended,
	}
}

// hideShard keeps the shard message hidden while its items run, when the
// queue can (queue.VisibilityChanger): every third of the job's item
// lease, it hides the message for one lease (plus the clock-skew
// allowance) from then, or until the deadline and the hand-over's bound
// when that is later, so that no other consumer receives it meanwhile
// (and its visibility is never cut below what the run may take).
// A failed extension is logged: a redelivery finds the items held and
// hands them over. The returned func stops it.
func (c *Consumer) hideShard(ctx context.Context, m *messageRun, deadline time.Time) func() {
	vc, ok := c.Queue.(queue.VisibilityChanger)
	if !ok || m.d.d.ReceiptHandle == "" {
		return func() {}
	}
	lease, skew := jobspec.ItemLease(m.d.job, m.d.key.Asset), m.d.job.Limits.ClockSkew
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(max(lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := c.now()
			hide := lease
			if !deadline.IsZero() {
				hide = max(hide, deadline.Sub(now)+handOverTimeout)
			}
			err := vc.ChangeVisibility(ctx, queue.ChangeVisibilityParams{
				ReceiptHandle: m.d.d.ReceiptHandle, Timeout: hide + skew, Now: now,
			})
			if err != nil {
				m.log.WarnContext(ctx, "shard message visibility not extended", slog.String("phase", "bulk"), slog.Any("error", err))
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
