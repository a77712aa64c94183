// Package poller feeds messages from a queue.Receiver to a batch handler the
// way Lambda's SQS event source does: batches of up to BatchSize, a fixed
// number of concurrent batches (the event source's maximum concurrency), a
// per-batch deadline, partial batch responses (only the messages the
// handler reports failed stay in the queue) and redelivery after the
// visibility timeout. Dead-lettering is the queue's own redrive policy.
//
// It is what runs the consumer where no managed event source exists: the
// embedded runtime (baton run) and a long-lived worker against SQS.
package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/queue"
)

// HandlerFunc processes one batch before deadline and returns the ids of
// the messages that failed (to be redelivered). Every other message of the
// batch is deleted.
type HandlerFunc func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) (failed []string)

// Poller receives batches and hands them to HandleFunc.
type Poller struct {
	Receiver   queue.Receiver
	HandleFunc HandlerFunc
	// BatchSize is the most messages per batch: 1..queue.MaxBatch, or up
	// to the Receiver's own limit when it takes more
	// (queue.LargeBatches: 100 on PostgreSQL); 0 means 10.
	BatchSize int
	// Visibility hides received messages this long; it must exceed Timeout.
	// 0 means 6 × Timeout (the ratio AWS recommends for event sources).
	Visibility time.Duration
	// Timeout is each batch's deadline after receipt (Lambda's function
	// timeout); 0 means 30s.
	Timeout time.Duration
	// Concurrency is the number of batches in flight at once; 0 means 1.
	Concurrency int
	// Wait is the long-poll wait of each receive; 0 means 1s.
	Wait time.Duration
	// RetryDelay, when positive, makes failed messages visible again after
	// this delay instead of after the rest of their visibility timeout.
	RetryDelay time.Duration
	NowFunc    func() time.Time
	Logger     *slog.Logger
}

func (p *Poller) now() time.Time {
	if p.NowFunc != nil {
		return p.NowFunc()
	}
	return time.Now()
}

func (p *Poller) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p *Poller) settings() (batch int, timeout, visibility, wait time.Duration) {
	batch, timeout, wait = p.BatchSize, p.Timeout, p.Wait
	if batch <= 0 {
		batch = queue.MaxBatch
	}
	batch = min(batch, queue.BatchLimit(p.Receiver))
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	visibility = p.Visibility
	if visibility <= 0 {
		visibility = 6 * timeout
	}
	if wait <= 0 {
		wait = time.Second
	}
	return batch, timeout, visibility, wait
}

// Run polls with Concurrency workers until ctx is done. In-flight batches
// get to finish (their own deadline still applies); then Run returns nil.
func (p *Poller) Run(ctx context.Context) error {
	if p.Receiver == nil || p.HandleFunc == nil {
		return errors.New("poller: Receiver and Handle are required")
	}
	workers := max(p.Concurrency, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := p.Poll(ctx); err != nil && ctx.Err() == nil {
					p.logger().WarnContext(ctx, "poll failed", slog.Any("error", err))
					sleep(ctx, time.Second)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// Poll receives one batch (waiting up to Wait for it), handles it and
// deletes the messages that did not fail. It returns how many messages it
// received. The handler runs under a context that is not cancelled by ctx,
// so a batch in flight finishes within its deadline when ctx ends.
func (p *Poller) Poll(ctx context.Context) (int, error) {
	batch, timeout, visibility, wait := p.settings()
	// The receive runs under a context that ctx's end does not cancel: a
	// long poll abandoned half-way may still take messages on the server
	// (SQS does, and so does the local SQS server), which would then stay
	// hidden for the whole visibility timeout with nobody to handle them.
	// It ends by itself after wait; its messages are handled as any batch
	// in flight.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), wait+receiveSlack)
	msgs, err := p.Receiver.Receive(rctx, queue.ReceiveParams{Max: batch, Visibility: visibility, Wait: wait, Now: p.now()})
	rcancel()
	if err != nil {
		return 0, fmt.Errorf("receive: %w", err)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	deadline := p.now().Add(timeout)
	hctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	failed := p.HandleFunc(hctx, deadline, msgs)
	failedSet := make(map[string]bool, len(failed))
	for _, id := range failed {
		failedSet[id] = true
	}
	// Acknowledge under a context of its own: a handler that used its whole
	// budget must not turn its successes into redeliveries.
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer acancel()
	var errs []error
	var done []queue.Delivery
	for _, m := range msgs {
		if !failedSet[m.MessageID] {
			done = append(done, m)
			continue
		}
		if p.RetryDelay > 0 {
			err := p.Receiver.ChangeVisibility(actx, queue.ChangeVisibilityParams{ReceiptHandle: m.ReceiptHandle, Timeout: p.RetryDelay, Now: p.now()})
			if err != nil && !errors.Is(err, queue.ErrInvalidReceipt) {
				errs = append(errs, fmt.Errorf("change visibility of %s: %w", m.MessageID, err))
			}
		}
	}
	errs = append(errs, p.delete(actx, done)...)
	return len(msgs), errors.Join(errs...)
}

// delete deletes the messages, in one call when the Receiver is a
// queue.BatchDeleter, and returns what failed. A handle that is no longer
// valid is only logged: the message was received again elsewhere after
// our visibility ran out, and that redelivery will be acknowledged as a
// duplicate.
func (p *Poller) delete(ctx context.Context, msgs []queue.Delivery) []error {
	var errs []error
	most := queue.BatchLimit(p.Receiver)
	for lo := 0; lo < len(msgs); lo += most {
		chunk := msgs[lo:min(len(msgs), lo+most)]
		handles := make([]string, len(chunk))
		ids := make(map[string]string, len(chunk)) // message id by handle
		for i, m := range chunk {
			handles[i], ids[m.ReceiptHandle] = m.ReceiptHandle, m.MessageID
		}
		err := queue.DeleteAll(ctx, p.Receiver, handles)
		var be *queue.BatchError
		switch {
		case err == nil:
		case errors.As(err, &be):
			for _, f := range be.Failed {
				if errors.Is(f.Err, queue.ErrInvalidReceipt) {
					p.logger().Warn("delete after visibility ran out", "message_id", ids[f.ID])
					continue
				}
				errs = append(errs, fmt.Errorf("delete %s: %w", ids[f.ID], f.Err))
			}
		default:
			errs = append(errs, fmt.Errorf("delete %d messages: %w", len(chunk), err))
		}
	}
	return errs
}

// receiveSlack bounds a receive beyond its long-poll wait.
const receiveSlack = 10 * time.Second

// ackTimeout bounds the deletes and visibility changes after a batch.
const ackTimeout = 10 * time.Second

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
