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

	every time.Duration // how often the claim is checked (check)

	mu        sync.Mutex
	until     time.Time // the claim's expiry, as written
	contacted time.Time // last write or check of the claim (time package clock)
	// One timer per claim, at the earlier of expireAt, when the context
	// ends unless a heartbeat renewed the claim, and checkAt, when the
	// next check is due (both on the time package clock; a zero checkAt:
	// no more checks).
	timer    *time.Timer
	expireAt time.Time
	checkAt  time.Time
	ended    error // the cause the context was cancelled with; nil while live
	stopped  bool  // the processor returned: nothing starts any more
	checking bool  // a check is under way: the next one due is skipped
	checks   sync.WaitGroup
}

var _ baton.Claim = (*taskClaim)(nil)

// startClaim binds a claim to m's claimed item and returns the processor's
// context, which ends with the claim, and a stop function to call once the
// processor returned: it stops the claim's timer and waits for a check
// under way.
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
	// The checks and the expiry share a timer, and no goroutine waits
	// for them: most processors return before the first check.
	cl.checkAt = time.Now().Add(cl.every)
	cl.timer = time.AfterFunc(cl.every, func() { cl.fire(ctx) })
	cl.arm(m.leaseUntil.Sub(m.now))
	cl.mu.Unlock()
	return cl, pctx, func() {
		cl.mu.Lock()
		cl.stopped = true
		cl.timer.Stop()
		cl.mu.Unlock()
		cl.checks.Wait() // a check under way ends first
		stopDeadline()
		cancel(nil)
	}
}

// arm (re)starts the expiry for d from now. Callers hold mu.
func (cl *taskClaim) arm(d time.Duration) {
	cl.expireAt = time.Now().Add(d)
	cl.resetLocked(time.Now())
}

// resetLocked sets the timer for the earlier of the expiry and the next
// check, unless the processor returned or the claim ended. Callers hold
// mu.
func (cl *taskClaim) resetLocked(now time.Time) {
	if cl.stopped || cl.ended != nil {
		return
	}
	next := cl.expireAt
	if !cl.checkAt.IsZero() && cl.checkAt.Before(next) {
		next = cl.checkAt
	}
	cl.timer.Reset(next.Sub(now))
}

// fire runs when the timer does: it ends the context once the expiry has
// come (the lease ran out without a heartbeat), else checks the claim
// when a check is due (check), and sets the timer again.
func (cl *taskClaim) fire(ctx context.Context) {
	cl.mu.Lock()
	now := time.Now()
	switch {
	case cl.stopped || cl.ended != nil:
		cl.mu.Unlock()
		return
	case !now.Before(cl.expireAt):
		cl.endLocked(fmt.Errorf("%s attempt %d: claim ended at %s without a heartbeat: %w",
			cl.key, cl.attempt, cl.until.UTC().Format(time.RFC3339Nano), context.DeadlineExceeded))
		cl.mu.Unlock()
		return
	case cl.checkAt.IsZero() || now.Before(cl.checkAt): // renewed meanwhile
		cl.resetLocked(now)
		cl.mu.Unlock()
		return
	}
	// A check is due; the next one every third of the lease after the
	// first, the ones overtaken skipped (as a ticker's).
	for !cl.checkAt.After(now) {
		cl.checkAt = cl.checkAt.Add(cl.every)
	}
	if ctx.Err() != nil { // the item's context is done: no more checks
		cl.checkAt = time.Time{}
		cl.resetLocked(now)
		cl.mu.Unlock()
		return
	}
	// The timer is set again before the check runs, so that a check stuck
	// on a slow store does not hold the expiry back; a check due while
	// one is under way is skipped.
	cl.resetLocked(now)
	if cl.checking || now.Sub(cl.contacted) < cl.every { // or a heartbeat wrote it meanwhile
		cl.mu.Unlock()
		return
	}
	cl.checking = true
	cl.checks.Add(1)
	cl.mu.Unlock()
	defer cl.checks.Done()
	cl.check(ctx)
	cl.mu.Lock()
	cl.checking = false
	cl.mu.Unlock()
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

// check reads the item, every third of its lease while the processor
// runs unless a heartbeat wrote it meanwhile (fire), so that a cancel or
// a takeover reaches a processor that never calls Heartbeat: it ends the
// context when the claim is over (judge).
func (cl *taskClaim) check(ctx context.Context) {
	it, err := cl.c.Ledger.GetItem(ctx, cl.key)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		cl.log.WarnContext(ctx, "claim check failed", slog.String("phase", "heartbeat"), slog.Any("error", err))
		return
	}
	cl.mu.Lock()
	cl.contacted = time.Now()
	cl.mu.Unlock()
	if cause := cl.judge(it, err); cause != nil {
		cl.log.InfoContext(ctx, "claim ended while the processor ran", slog.String("phase", "heartbeat"), slog.Any("cause", cause))
	}
}
