package consumer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/queue"
)

// visibilityTimeout bounds the visibility changes of a batch's failed
// messages, made after the batch's own deadline may have passed.
const visibilityTimeout = 5 * time.Second

// retryDelay is how long the item of m, whose attempt failed with perr
// and has attempts left, waits before its next attempt: the delay perr
// names with baton.RetryAfter, clamped to [baton.MinRetryAfter,
// baton.MaxRetryDelay] (and logged when it is), else the item's
// baton.RetryPolicy; 0 when neither names one.
func (c *Consumer) retryDelay(ctx context.Context, m *messageRun, perr error) time.Duration {
	asked, ok := baton.RetryAfterOf(perr)
	if !ok {
		return jobspec.RetryDelay(jobspec.ItemRetry(m.d.job, m.d.key.Asset), m.item.Attempt)
	}
	d := min(max(asked, baton.MinRetryAfter), baton.MaxRetryDelay)
	if d != asked {
		m.log.WarnContext(ctx, "retry delay clamped", slog.String("phase", "fail"),
			slog.Duration("asked", asked), slog.Duration("retry_in", d),
			slog.Duration("min", baton.MinRetryAfter), slog.Duration("max", baton.MaxRetryDelay))
	}
	return d
}

// delay hides the failed message d for its verdict's delay (or the
// consumer's RetryDelay) when the queue can (queue.VisibilityChanger),
// and returns its Failure, whose Delay says whether it did. A change that
// fails leaves the message as the queue hides it: it comes back later,
// never earlier, than asked.
func (c *Consumer) delay(ctx context.Context, d queue.Delivery, v verdict) Failure {
	f := Failure{MessageID: v.outcome.MessageID, Err: v.err}
	delay := v.delay
	if delay <= 0 {
		delay = c.RetryDelay
	}
	vc, ok := c.Queue.(queue.VisibilityChanger)
	if delay <= 0 || !ok || d.ReceiptHandle == "" {
		return f
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), visibilityTimeout)
	defer cancel()
	err := vc.ChangeVisibility(ctx, queue.ChangeVisibilityParams{ReceiptHandle: d.ReceiptHandle, Timeout: delay, Now: c.now()})
	if err != nil {
		if !errors.Is(err, queue.ErrInvalidReceipt) {
			c.logger().WarnContext(ctx, "retry delay not applied; the message comes back with its visibility timeout",
				slog.String("phase", "fail"), slog.String("message_id", d.MessageID), slog.Duration("retry_in", delay), slog.Any("error", err))
		}
		return f
	}
	f.Delay = delay
	return f
}

// heldDelay is how long the message of an item held by another live claim
// waits, at its receives-th receive: the consumer's RetryDelay doubled at
// each receive, up to when the claim can be taken over (left: its lease
// and the skew allowance from now, plus a tenth for the clocks). A copy
// of a healthy claim's message comes back soon and finds its item done; a
// dead consumer's claim costs its message a few receives, not one per
// retry delay of the lease. 0 (as the queue hides it) without a
// RetryDelay, or when the claim can be taken over already.
func (c *Consumer) heldDelay(left time.Duration, receives int) time.Duration {
	if left <= 0 || c.RetryDelay <= 0 {
		return 0
	}
	d := c.RetryDelay
	for i := 1; i < receives && d < left; i++ {
		d *= 2
	}
	return min(d, left+left/10, baton.MaxRetryDelay)
}
