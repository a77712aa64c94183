package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/telemetry"
)

// Set-based transitions. When the ledger claims several items in one
// round trip (ledger.BatchClaimer, PostgreSQL), the messages of a batch
// that need no step between their vouch and their claim are handled in
// waves of the batch's parallelism: each message of a wave is gated as
// run gates it (deadline, stop, vouch, page, run budget), the wave's items
// that passed are claimed together (each claim conditioned on its own
// item; a refused one is that message's verdict alone), their processors
// run at once, and, when the ledger completes several items in one round
// trip too (ledger.BatchCompleter), the items that succeeded are completed
// together once every processor of the wave has returned. A processor
// that returned waits for its siblings at most a third of its item's
// lease, then completes its item alone. Failures, cancellations and
// releases are recorded one by one, as in run. The messages that need a
// step before their claim (a shard, a derived item and its inputs' check,
// a job with rate limits and their waits) take run's path.

// batchable reports whether d may go in a wave: a decoded item message
// whose claim follows its gate at once.
func batchable(d *delivery) bool {
	if d.err != nil || d.msg.IsShard() || len(d.job.RateLimits) > 0 {
		return false
	}
	_, derived := jobspec.DerivedItem(d.job, d.key.Asset)
	return !derived
}

// runWave handles ds (batchable, at most the batch's parallelism) as one
// wave and returns their verdicts, in order, the dead-letter policy
// applied.
func (c *Consumer) runWave(ctx context.Context, deadline time.Time, ds []*delivery, bc ledger.BatchClaimer) []verdict {
	vs := make([]verdict, len(ds))
	ms := make([]*messageRun, len(ds))
	// Each message's steps run under its own span (startItem), as
	// handle's do; the wave's claim and completion calls under the batch's.
	ctxs := make([]context.Context, len(ds))
	spans := make([]trace.Span, len(ds))
	passed := make([]bool, len(ds))
	runs := make([]messageRun, len(ds)) // one allocation for the wave
	var wg sync.WaitGroup
	for i, d := range ds {
		ctxs[i], spans[i] = c.startItem(ctx, d)
		wg.Go(func() {
			ms[i] = &runs[i]
			c.initRun(ms[i], deadline, d)
			vs[i], passed[i] = c.gate(ctxs[i], deadline, ms[i])
		})
	}
	wg.Wait()

	var claiming []int
	var ps []ledger.ClaimParams
	for i, m := range ms {
		if !passed[i] {
			continue
		}
		// The claim starts now, after the wave's gates, which a stop or
		// the batch's end may have overtaken.
		m.now = c.now()
		if err := ctx.Err(); err != nil {
			vs[i] = m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", m.d.key, err))
			continue
		}
		if c.stopped() {
			vs[i] = m.fail(StatusReleased, fmt.Errorf("%s not started: %w", m.d.key, ErrStopped))
			continue
		}
		if !m.hardEnd.IsZero() && !m.now.Before(m.hardEnd) {
			vs[i] = m.fail(StatusNotStarted, fmt.Errorf("%s not started: the deadline less the margin passed at %s",
				m.d.key, m.hardEnd.UTC().Format(time.RFC3339Nano)))
			continue
		}
		m.leaseUntil = leaseEnd(jobspec.ItemLease(m.d.job, m.d.key.Asset), m.now, m.hardEnd)
		m.limits = newTaskLimiter(c, m.d.job, m.d.key, m.leaseUntil)
		m.limits.log = m.log
		claiming = append(claiming, i)
		ps = append(ps, c.claimParams(m))
	}
	// Each item's claim step has its span; the one statement that claims
	// them all runs under the first one's (a trace shows it once).
	claimSpans := make([]trace.Span, len(claiming))
	bctx := ctx
	for k, i := range claiming {
		var sctx context.Context
		sctx, claimSpans[k] = c.stepSpan(ctxs[i], telemetry.SpanClaim)
		if k == 0 {
			bctx = sctx
		}
	}
	var outs []ledger.Outcome
	if len(ps) > 0 {
		start := c.now()
		outs = bc.ClaimBatch(bctx, ps)
		took := c.now().Sub(start)
		for k, i := range claiming {
			c.claimed(ctxs[i], ms[i].d.job.Name, took)
			endClaimSpan(claimSpans[k], outs[k].Item, outs[k].Err)
		}
	}
	var claimed []int
	for k, i := range claiming {
		v, ok := c.claimOutcome(ctxs[i], ms[i], outs[k].Item, outs[k].Err)
		if !ok {
			vs[i] = v
			continue
		}
		claimed = append(claimed, i)
	}
	comp := c.newCompleter(len(claimed))
	for _, i := range claimed {
		m := ms[i]
		wg.Go(func() {
			result, done, perr := c.process(ctxs[i], m)
			vs[i] = c.recordInWave(ctxs[i], m, result, done, perr, comp)
		})
	}
	wg.Wait()
	for i, d := range ds {
		if m := ms[i]; m.limits != nil {
			m.limits.freeAll(context.WithoutCancel(ctxs[i]), m.log)
		}
		vs[i] = c.conclude(ctxs[i], d, vs[i])
		c.endItem(ctxs[i], spans[i], d, vs[i])
	}
	return vs
}

// recordInWave is record for an item of a wave: a success is completed
// with the wave's (comp); anything else is recorded alone, its place in
// the wave's completion given up first.
func (c *Consumer) recordInWave(ctx context.Context, m *messageRun, result []byte, done time.Time, perr error, comp *completer) (v verdict) {
	if comp == nil || perr != nil || errors.Is(m.ended, baton.ErrCancelled) {
		comp.drop(ctx)
		return c.record(ctx, m, result, done, perr)
	}
	ctx, span := c.stepSpan(ctx, telemetry.SpanComplete) // as record's
	defer func() { telemetry.End(span, v.outcome.Status, nil) }()
	wait := max(jobspec.ItemLease(m.d.job, m.d.key.Asset)/3, time.Millisecond)
	_, err := comp.complete(ctx, c.completeParams(m, result, done), wait)
	return c.completed(ctx, m, done, err)
}

// completer gathers the completions of a wave's items and writes them in
// one call (ledger.BatchCompleter) once every member has either submitted
// its completion or dropped out. That write happens once at most: the
// last member to submit or drop out makes it.
type completer struct {
	one   ledger.Store
	batch ledger.BatchCompleter

	mu      sync.Mutex
	left    int                 // members that have neither submitted nor dropped out
	slots   []pendingCompletion // the members' submissions, one allocation for the wave
	pending []*pendingCompletion
	// flushed is closed once the wave's completions are written, each
	// pending one's outcome set.
	flushed chan struct{}
}

type pendingCompletion struct {
	p   ledger.CompleteParams
	out ledger.Outcome // set by the flush, before flushed is closed
}

// newCompleter returns the completer of a wave of members claimed items,
// or nil when the ledger completes items one by one or the wave has
// fewer than two.
func (c *Consumer) newCompleter(members int) *completer {
	bc, ok := c.Ledger.(ledger.BatchCompleter)
	if !ok || members < 2 {
		return nil
	}
	return &completer{one: c.Ledger, batch: bc, left: members,
		slots: make([]pendingCompletion, 0, members), pending: make([]*pendingCompletion, 0, members), flushed: make(chan struct{})}
}

// drop says a member will not submit a completion. Safe on nil.
func (cp *completer) drop(ctx context.Context) {
	if cp == nil {
		return
	}
	cp.mu.Lock()
	cp.left--
	batch := cp.takeLocked()
	cp.mu.Unlock()
	cp.flush(ctx, batch)
}

// takeLocked returns the pending completions once no member is left to
// submit; nil before. Callers hold mu.
func (cp *completer) takeLocked() []*pendingCompletion {
	if cp.left > 0 || len(cp.pending) == 0 {
		return nil
	}
	batch := cp.pending
	cp.pending = nil
	return batch
}

// complete submits p and returns its outcome: written with the wave's
// other completions once every member has submitted or dropped out, or
// alone when that has not happened within wait.
func (cp *completer) complete(ctx context.Context, p ledger.CompleteParams, wait time.Duration) (ledger.Item, error) {
	cp.mu.Lock()
	var pc *pendingCompletion
	if len(cp.slots) < cap(cp.slots) { // a slot per member: never appended past
		cp.slots = append(cp.slots, pendingCompletion{p: p})
		pc = &cp.slots[len(cp.slots)-1]
	} else {
		pc = &pendingCompletion{p: p}
	}
	cp.pending = append(cp.pending, pc)
	cp.left--
	batch := cp.takeLocked()
	cp.mu.Unlock()
	if batch != nil { // the last: this completion is among those written now
		cp.flush(ctx, batch)
		return pc.out.Item, pc.out.Err
	}

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-cp.flushed:
		return pc.out.Item, pc.out.Err
	case <-t.C:
	}
	cp.mu.Lock()
	for i, q := range cp.pending {
		if q == pc { // still waiting: withdrawn, written alone
			cp.pending = append(cp.pending[:i], cp.pending[i+1:]...)
			cp.mu.Unlock()
			return cp.one.Complete(ctx, p)
		}
	}
	cp.mu.Unlock()
	<-cp.flushed // taken by a flush meanwhile
	return pc.out.Item, pc.out.Err
}

// flush writes batch's completions, sets each its outcome and closes
// flushed. Called once at most (see completer), with nil meanwhile.
func (cp *completer) flush(ctx context.Context, batch []*pendingCompletion) {
	switch len(batch) {
	case 0:
		return
	case 1:
		it, err := cp.one.Complete(ctx, batch[0].p)
		batch[0].out = ledger.Outcome{Item: it, Err: err}
	default:
		ps := make([]ledger.CompleteParams, len(batch))
		for i, pc := range batch {
			ps[i] = pc.p
		}
		outs := cp.batch.CompleteBatch(ctx, ps)
		for i, pc := range batch {
			pc.out = outs[i]
		}
	}
	close(cp.flushed)
}
