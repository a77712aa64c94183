package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// taskClaim is the baton.Claim of one processor call: it renews the
// claim (Heartbeat), checks it on its own every third of the lease, and
// ends the processor's context with a cause when the lease runs out, the
// item is cancelled, or the claim is lost.
//
// Two clocks meet here, each for its own use: the times written to the
// ledger come from the consumer's NowFunc, as every other write; the
// timers that end the context and pace the checks run on the time
// package's clock (which testing/synctest fakes).
type taskClaim struct {
	c       *Consumer
	key     ledger.ItemKey
	attempt int
	receipt string        // the message's receipt handle; "" when unknown
	lease   time.Duration // the item's lease: what a heartbeat adds
	skew    time.Duration
	hardEnd time.Time // the invocation's deadline less the margin; zero: none
	cancel  context.CancelCauseFunc
	log     *slog.Logger
	limits  *taskLimiter // its in-flight slots follow the claim's end

	every time.Duration // how often the claim is checked (checkLoop)

	mu        sync.Mutex
	until     time.Time   // the claim's expiry, as written
	contacted time.Time   // last write or check of the claim (time package clock)
	expiry    *time.Timer // ends the context at until
	armed     int         // generation of expiry: a stale timer's func does nothing
	ended     error       // the cause the context was cancelled with; nil while live
	check     *time.Timer // runs the next check (checkLoop)
	stopped   bool        // the processor returned: no check starts any more
	checks    sync.WaitGroup
}

var _ baton.Claim = (*taskClaim)(nil)

// startClaim binds a claim to m's claimed item and returns the processor's
// context, which ends with the claim, and a stop function to call once the
// processor returned: it stops the claim's timers and check loop.
func (c *Consumer) startClaim(ctx context.Context, m *messageRun) (*taskClaim, context.Context, func()) {
	d := m.d
	cl := &taskClaim{
		c: c, key: d.key, attempt: m.item.Attempt, receipt: d.d.ReceiptHandle,
		lease: jobspec.ItemLease(d.job, d.key.Asset), skew: d.job.Limits.ClockSkew,
		hardEnd: m.hardEnd, log: m.log, until: m.leaseUntil, contacted: time.Now(), limits: m.limits,
	}
	cl.every = max(cl.lease/3, time.Millisecond)
	pctx, cancel := context.WithCancelCause(ctx)
	cl.cancel = cancel
	var stopDeadline context.CancelFunc = func() {}
	if !cl.hardEnd.IsZero() {
		// Shown as the context's deadline; on the real clock, as the
		// claim's expiry timer.
		pctx, stopDeadline = context.WithDeadline(pctx, time.Now().Add(cl.hardEnd.Sub(m.now)))
	}
	cl.mu.Lock()
	cl.arm(m.leaseUntil.Sub(m.now))
	// The checks run on a timer of their own, not a goroutine waiting
	// for them: most processors return before the first.
	cl.check = time.AfterFunc(cl.every, func() { cl.checkLoop(ctx) })
	cl.mu.Unlock()
	return cl, pctx, func() {
		cl.mu.Lock()
		cl.stopped = true
		cl.check.Stop()
		cl.expiry.Stop()
		cl.mu.Unlock()
		cl.checks.Wait() // a check under way ends first
		stopDeadline()
		cancel(nil)
	}
}

// arm (re)starts the expiry timer for d from now. Callers hold mu.
func (cl *taskClaim) arm(d time.Duration) {
	if cl.expiry != nil {
		cl.expiry.Stop()
	}
	cl.armed++
	gen, until := cl.armed, cl.until
	cl.expiry = time.AfterFunc(d, func() {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		if gen != cl.armed {
			return // renewed meanwhile
		}
		cl.endLocked(fmt.Errorf("%s attempt %d: claim ended at %s without a heartbeat: %w",
			cl.key, cl.attempt, until.UTC().Format(time.RFC3339Nano), context.DeadlineExceeded))
	})
}

// end cancels the processor's context with cause, once, and returns the
// cause it was ended with.
func (cl *taskClaim) end(cause error) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.endLocked(cause)
}

func (cl *taskClaim) endLocked(cause error) error {
	if cl.ended == nil {
		cl.ended = cause
		cl.cancel(cause)
	}
	return cl.ended
}

// cause returns the cause the claim ended the context with; nil while
// live.
func (cl *taskClaim) cause() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.ended
}

// Until implements baton.Claim.
func (cl *taskClaim) Until() time.Time {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.until
}

// Heartbeat implements baton.Claim: one Extend of the item, then the
// message's visibility when the queue can change it.
func (cl *taskClaim) Heartbeat(ctx context.Context) error {
	if err := cl.cause(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err // cancelled or lost: no write would change that
	}
	now := cl.c.now()
	until := now.Add(cl.lease)
	if !cl.hardEnd.IsZero() && cl.hardEnd.Before(until) {
		until = cl.hardEnd
	}
	it, err := cl.c.Ledger.Extend(ctx, ledger.ExtendParams{
		Key: cl.key, Owner: cl.c.Owner, Attempt: cl.attempt, LeaseUntil: until, Now: now,
	})
	if err != nil {
		if lost := cl.judge(it, err); lost != nil {
			return lost
		}
		return fmt.Errorf("heartbeat %s attempt %d: %w", cl.key, cl.attempt, err)
	}
	cl.mu.Lock()
	if cl.ended != nil { // the lease ran out before the write: the context is gone
		err := cl.ended
		cl.mu.Unlock()
		return err
	}
	cl.until, cl.contacted = until, time.Now()
	cl.arm(until.Sub(now))
	cl.mu.Unlock()
	if cl.limits != nil {
		if err := cl.limits.renew(ctx, until); err != nil { // the slot comes back at its old end: at worst one more in flight
			cl.log.WarnContext(ctx, "heartbeat: rate limit slots not renewed", slog.String("phase", "heartbeat"), slog.Any("error", err))
		}
	}

	if vc, ok := cl.c.Queue.(queue.VisibilityChanger); ok && cl.receipt != "" {
		// The message stays hidden while the claim lasts, and shows again
		// when another consumer may take the item over.
		err := vc.ChangeVisibility(ctx, queue.ChangeVisibilityParams{
			ReceiptHandle: cl.receipt, Timeout: until.Sub(now) + cl.skew, Now: now,
		})
		if err != nil { // the ledger's claim holds the item; a redelivery finds it held
			cl.log.WarnContext(ctx, "heartbeat: message visibility not extended", slog.String("phase", "heartbeat"), slog.Any("error", err))
		}
	}
	return nil
}

// judge reads a refused Extend, or a check's read, of the item it: a
// CANCELLED item or a claim lost end the context and return why; anything
// else returns nil.
func (cl *taskClaim) judge(it ledger.Item, err error) error {
	var cause error
	switch {
	case it.State == ledger.ItemCancelled:
		cause = fmt.Errorf("%s: %w (%s)", cl.key, baton.ErrCancelled, it.Error)
	case errors.Is(err, ledger.ErrTerminal), errors.Is(err, ledger.ErrConflict), errors.Is(err, ledger.ErrNotFound),
		err == nil && (it.State != ledger.ItemRunning || it.Owner != cl.c.Owner || it.Attempt != cl.attempt):
		cause = fmt.Errorf("%s attempt %d: %w: the item is %s by %q attempt %d",
			cl.key, cl.attempt, baton.ErrClaimLost, it.State, it.Owner, it.Attempt)
	default:
		return nil
	}
	cl.end(cause) // a context ended before (its lease ran out) keeps its first cause
	return cause
}

// checkLoop reads the item every third of its lease while the processor
// runs, unless a heartbeat wrote it meanwhile, so that a cancel or a
// takeover reaches a processor that never calls Heartbeat. It is one
// round of that loop, run by the check timer, which it sets again for
// the next unless the processor returned, ctx is done or the claim ended.
func (cl *taskClaim) checkLoop(ctx context.Context) {
	cl.mu.Lock()
	if cl.stopped || cl.ended != nil || ctx.Err() != nil {
		cl.mu.Unlock()
		return
	}
	if time.Since(cl.contacted) < cl.every { // a heartbeat wrote it meanwhile
		cl.check.Reset(cl.every)
		cl.mu.Unlock()
		return
	}
	cl.checks.Add(1)
	cl.mu.Unlock()
	defer cl.checks.Done()
	it, err := cl.c.Ledger.GetItem(ctx, cl.key)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		cl.log.WarnContext(ctx, "claim check failed", slog.String("phase", "heartbeat"), slog.Any("error", err))
		cl.again()
		return
	}
	cl.mu.Lock()
	cl.contacted = time.Now()
	cl.mu.Unlock()
	if cause := cl.judge(it, err); cause != nil {
		cl.log.InfoContext(ctx, "claim ended while the processor ran", slog.String("phase", "heartbeat"), slog.Any("cause", cause))
		return
	}
	cl.again()
}

// again sets the check timer for the next check, unless the processor
// returned.
func (cl *taskClaim) again() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if !cl.stopped {
		cl.check.Reset(cl.every)
	}
}
