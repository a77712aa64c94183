package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// sendParallel is the number of batches the fan-out keeps in flight: a
// send is a round trip, and the queue takes batches in parallel (SQS
// scales out; the embedded queue lines its writers up). Ten batches of ten
// are a hundred messages per round trip, and the AWS SDK's HTTP client
// keeps ten idle connections per host, so each wave reuses them. On the
// emulators it fans out about a fifth faster than four.
const sendParallel = 10

// fanOut sends the catalog from run.Cursor on, chunk by chunk, and
// checkpoints the cursor after every chunk. It returns nil when the run is
// fanned out or was stopped by the deadline or the budget (Summary.Stopped).
// Before each chunk it checks the deadline, the budget and ctx, and renews
// the lease when due.
func (c *Coordinator) fanOut(ctx context.Context, t *tickRun, run ledger.Run) error {
	if jobspec.RunTime(t.job) || run.ID.Submitted() {
		return c.fanOutPages(ctx, t, run)
	}
	j, sum, log := t.job, t.sum, t.log
	chunk := c.Checkpoint
	if chunk <= 0 {
		chunk = DefaultCheckpoint
	}
	fanStart := c.now()
	assets := j.Assets
	if k := c.expandItems(t.job); k > 0 {
		chunk *= k // a checkpoint per chunk of messages, shard messages too
	}
	cursor := run.Cursor
	done := false
	for !done {
		now := c.now()
		if cursor < len(assets) {
			if stop := stopReason(j.Limits, t.tr.Deadline, t.start, now); stop != "" {
				sum.Stopped = stop
				log.WarnContext(ctx, "fan-out stopped; the next invocation resumes", slog.String("phase", "fan-out"),
					slog.String("stopped", stop), slog.Int("cursor", cursor), slog.Int("total", len(assets)),
					slog.Duration("duration", now.Sub(fanStart)))
				return nil
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("fan out %s at %d/%d: %w", run.ID, cursor, len(assets), err)
			}
			if err := c.renewIfDue(ctx, log, j.Limits, t.hold, t.tr.Deadline, now); err != nil {
				return fmt.Errorf("fan out %s at %d/%d: %w", run.ID, cursor, len(assets), err)
			}
		}
		var err error
		if cursor, done, err = c.sendChunk(ctx, t, run.ID, cursor, min(cursor+chunk, len(assets))); err != nil {
			return err
		}
	}
	log.InfoContext(ctx, "fanned out", slog.String("phase", "fan-out"), slog.Int("enqueued", sum.Enqueued),
		slog.Int("total", len(assets)), slog.Duration("duration", c.now().Sub(fanStart)))
	return nil
}

// sendChunk sends the catalog assets [cursor, end) of run id and
// checkpoints the cursor past the messages sent. It returns the new
// cursor, and done when the catalog has been sent whole. A send that fails
// part-way is checkpointed as far as it got, then reported.
func (c *Coordinator) sendChunk(ctx context.Context, t *tickRun, id ledger.RunID, cursor, end int) (next int, done bool, err error) {
	assets, fence, sum := t.job.Assets, t.hold.lease.Fence, t.sum
	var sent int
	var sendErr error
	covered := 0 // assets the messages sent stand for
	if k := c.expandItems(t.job); end > cursor && k > 0 {
		// Hierarchical: one shard message per k assets, each expanded
		// by a consumer (see consumer's shard messages).
		var msgs []queue.Message
		var ends []int
		for i := cursor; i < end; i += k {
			to := min(i+k, end)
			msgs = append(msgs, message.NewShard(ledger.ItemKey{Run: id, Asset: assets[i]}, fence, i, to).QueueMessage())
			ends = append(ends, to)
		}
		telemetry.Stamp(ctx, msgs)
		sent, sendErr = queue.SendAll(ctx, c.Queue, msgs, &queue.SendAllOptions{Parallel: sendParallel})
		sum.ShardMessages += sent
		if sent > 0 {
			covered = ends[sent-1] - cursor
		}
		sum.Enqueued += covered
	} else if end > cursor {
		msgs := make([]queue.Message, 0, end-cursor)
		for _, a := range assets[cursor:end] {
			key := ledger.ItemKey{Run: id, Asset: a}
			msgs = append(msgs, message.New(key, fence, false).QueueMessage())
		}
		telemetry.Stamp(ctx, msgs)
		sent, sendErr = queue.SendAll(ctx, c.Queue, msgs, &queue.SendAllOptions{Parallel: sendParallel})
		covered = sent
		sum.Enqueued += sent
	}
	if sent == 0 && sendErr != nil {
		return cursor, false, fmt.Errorf("fan out %s at %d/%d: %w", id, cursor, len(assets), sendErr)
	}
	next = cursor + covered
	done = sendErr == nil && next >= len(assets)
	if _, err := c.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{
		ID: id, Fence: fence, Cursor: next, Done: done, Now: c.now(),
	}); err != nil {
		if sendErr != nil {
			err = fmt.Errorf("%w (after a send error: %v)", err, sendErr)
		}
		return cursor, false, fmt.Errorf("fan out %s: checkpoint cursor %d: %w", id, next, err)
	}
	sum.Cursor = next
	t.log.DebugContext(ctx, "fan-out checkpoint", slog.String("phase", "fan-out"),
		slog.Int("cursor", next), slog.Int("total", len(assets)), slog.Bool("done", done))
	if sendErr != nil {
		return next, done, fmt.Errorf("fan out %s at %d/%d: %w", id, next, len(assets), sendErr)
	}
	return next, done, nil
}

// stopReason says whether the fan-out must stop before its next chunk.
func stopReason(lim baton.Limits, deadline, start, now time.Time) string {
	if !deadline.IsZero() && !now.Before(deadline.Add(-lim.DeadlineMargin)) {
		return StoppedDeadline
	}
	if lim.FanOutBudget > 0 && now.Sub(start) >= lim.FanOutBudget {
		return StoppedBudget
	}
	return ""
}

// renewIfDue renews the lease once half its TTL has gone, never past the
// deadline. Losing the lease is an error: another coordinator may own the
// run now (it resumes from the checkpointed cursor).
func (c *Coordinator) renewIfDue(ctx context.Context, log *slog.Logger, lim baton.Limits, h *holding, deadline, now time.Time) error {
	if h.unleased || now.Sub(h.renewed) < h.ttl/2 {
		return nil
	}
	ttl := c.ttl(lim, now, deadline)
	if ttl <= 0 {
		return nil // the deadline check stops the fan-out first
	}
	l, err := c.Leases.Renew(ctx, lease.RenewParams{Job: h.lease.Job, Owner: h.lease.Owner, Fence: h.lease.Fence, TTL: ttl, Now: now})
	if err != nil {
		return fmt.Errorf("renew lease (fence %d): %w", h.lease.Fence, err)
	}
	h.lease, h.ttl, h.renewed = l, ttl, now
	log.InfoContext(ctx, "lease renewed", slog.String("phase", "fan-out"), slog.Time("expires", l.ExpiresAt))
	return nil
}

// expandItems returns the assets per shard message of a fan-out of j's
// assets, or 0 when it sends item messages (see Coordinator.ExpandFrom).
// A bulk job (baton.Job.Bulk) fans out in shard messages at any size,
// unless ExpandFrom is negative.
func (c *Coordinator) expandItems(j baton.Job) int {
	from := c.ExpandFrom
	if from == 0 {
		from = DefaultExpandFrom
	}
	if from > 0 && j.Bulk {
		from = 1
	}
	if from < 0 || len(j.Assets) < from {
		return 0
	}
	k := c.ExpandItems
	if k <= 0 {
		k = DefaultExpandItems
	}
	return min(k, message.MaxExpand)
}
