package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// What ReplayItem did (ItemReplay.Outcome).
const (
	// ItemEnqueued: the item was not terminal; its message was sent again
	// (the consumer claims it, or finds it held and retries later).
	ItemEnqueued = "enqueued"
	// ItemAlreadyTerminal: the item is SUCCEEDED, DEAD or CANCELLED and
	// Force was not set; nothing was written.
	ItemAlreadyTerminal = "already_terminal"
	// ItemNewGeneration: Force on a terminal item opened the tick's next
	// generation, carried the other items over and enqueued the item.
	ItemNewGeneration = "new_generation"
)

// Errors of ReplayItem.
var (
	// ErrItemHeld: the item is RUNNING under a live claim and Force was not
	// set. The error is an *ItemHeldError.
	ErrItemHeld = errors.New("item held by a live owner")
	// ErrRunInFlight: Force on a terminal item of a run that has not
	// settled: the other items' outcomes, which the next generation
	// carries over, are not known yet.
	ErrRunInFlight = errors.New("run not settled")
)

// ItemHeldError reports the live claim that refused a replay.
type ItemHeldError struct{ Item ledger.Item }

func (e *ItemHeldError) Error() string {
	return fmt.Sprintf("%s is RUNNING, claimed by %s (attempt %d) until %s", e.Item.Key, e.Item.Owner, e.Item.Attempt,
		e.Item.LeaseUntil.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrItemHeld) true.
func (e *ItemHeldError) Is(target error) bool { return target == ErrItemHeld }

// ItemReplay reports what ReplayItem did.
type ItemReplay struct {
	Outcome string
	// Key is the item enqueued: in the new generation for
	// ItemNewGeneration, else the key asked for.
	Key ledger.ItemKey
	// Before is the item's record before the replay; State "" when it had
	// none.
	Before ledger.Item
	Fence  int64 // the fence in the message sent
	// Carried lists, for ItemNewGeneration, the items copied into the new
	// generation with their terminal state, by name; Rerun the items that
	// run again (the item and the derived items that take it as input).
	Carried map[string]ledger.ItemState
	Rerun   []string
}

var replays atomic.Int64

// ReplayItem runs one item of run id (the tick's current generation) again
// through the queue, as the coordinator's fan-out would.
//
//   - Not terminal (no record, FAILED, RUNNING): its message is sent
//     again with the run's fence (a derived item's message says so, and
//     waits for its inputs as usual). A RUNNING item under a live claim is
//     refused (*ItemHeldError) unless force: the claim would refuse the
//     delivery anyway, which is then retried.
//   - Terminal, without force: nothing happens (ItemAlreadyTerminal).
//   - Terminal, with force: terminal records are never overwritten, so
//     the tick's next generation is opened under the job's lease: every
//     other item's terminal outcome is carried over (SUCCEEDED with its
//     result, DEAD and CANCELLED with the reason), one claim and one
//     completion (or failure, or cancel) each, the item is enqueued, and
//     the run is marked fanned out. The derived items that take the item
//     as input run again through fan-in. Refused with ErrRunInFlight when
//     the run has not settled. Interrupted half-way, the new generation
//     is left fanning out, and 'replay tick' of the tick resumes it: its
//     fan-out sends every asset, the carried ones are acknowledged as
//     duplicates and the others run. Another coordinator holding the job's
//     lease refuses it with a *lease.HeldError (matching lease.ErrHeld).
//     The copy renews the lease as it goes (every 16 items,
//     and whenever half the lease's TTL has gone) and checks, with a
//     fenced write on the new run, that no newer coordinator resumed it;
//     a lost lease stops it with an error matching lease.ErrNotHolder, a
//     resumed run with one matching ledger.ErrConflict. A CANCELLED item
//     is carried over only when it has no record in the new generation
//     (see carry).
func (e *Runtime) ReplayItem(ctx context.Context, id ledger.RunID, asset string, force bool) (ItemReplay, error) {
	j, err := e.opts.Catalog.Lookup(id.Job)
	if err != nil {
		return ItemReplay{}, err
	}
	if jobspec.RunTime(j) {
		return ItemReplay{}, fmt.Errorf("job %s computes its items when its run opens: replay the tick instead (a forced replay opens a generation with a list of its own)", j.Name)
	}
	if !j.HasItem(asset) {
		return ItemReplay{}, fmt.Errorf("job %s has no asset or derived item %q", j.Name, asset)
	}
	run, err := ledger.GetRunOf(ctx, e.backend.Ledger, id)
	if err != nil {
		return ItemReplay{}, fmt.Errorf("replay %s/%s: %w", id, asset, err)
	}
	if run.ID != id {
		return ItemReplay{}, fmt.Errorf("replay %s/%s: the tick's current run is %s: %w", id, asset, run.ID, ledger.ErrConflict)
	}
	key := ledger.ItemKey{Run: id, Asset: asset}
	rep := ItemReplay{Key: key, Fence: run.Fence}
	before, err := e.backend.Ledger.GetItem(ctx, key)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return rep, fmt.Errorf("replay %s: %w", key, err)
	}
	rep.Before = before
	now := e.now()
	switch {
	case before.State.Terminal() && !force:
		rep.Outcome = ItemAlreadyTerminal
		return rep, nil
	case before.State.Terminal():
		return e.replayGeneration(ctx, j, run, asset, rep)
	case before.State == ledger.ItemRunning && before.LeaseUntil.Add(j.Limits.ClockSkew).After(now) && !force:
		return rep, &ItemHeldError{Item: before}
	}
	if def, ok := jobspec.DerivedItem(j, asset); ok && before.State == "" {
		// A derived item's message before its inputs ended would only
		// come back, receive after receive, until they have (and fan-in
		// enqueues it anyway once they have all succeeded). One whose input
		// ended without success is sent: the consumer cancels it and the
		// items downstream, which a crash may have left undone.
		if err := e.inputsReady(ctx, id, def); err != nil {
			return rep, err
		}
	}
	if err := e.send(ctx, j, key, run.Fence); err != nil {
		return rep, err
	}
	rep.Outcome = ItemEnqueued
	return rep, nil
}

// ErrInputsPending matches the refusal of a replay of a derived item
// some of whose inputs have not ended (and none ended without success);
// the error names them and their states.
var ErrInputsPending = errors.New("inputs not all succeeded")

// inputsReady returns an error matching ErrInputsPending, naming each
// input of def in run id that has not ended and its state, when some
// input has not ended and none ended without success (fanin.Waiting, the
// consumer's verdict that holds the message).
func (e *Runtime) inputsReady(ctx context.Context, id ledger.RunID, def baton.Derived) error {
	var pending []string
	states := make(map[string]ledger.ItemState, len(def.Inputs))
	for _, in := range def.Inputs {
		it, err := e.backend.Ledger.GetItem(ctx, ledger.ItemKey{Run: id, Asset: in})
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			pending = append(pending, in+" not started")
		case err != nil:
			return fmt.Errorf("replay %s/%s: input %s: %w", id, def.Name, in, err)
		default:
			states[in] = it.State
			if !it.State.Terminal() {
				pending = append(pending, fmt.Sprintf("%s %s", in, it.State))
			}
		}
	}
	if v, _ := fanin.Inputs(def, states); v != fanin.Waiting {
		return nil
	}
	return fmt.Errorf("replay %s/%s: %w (%s): fan-in enqueues it once they have; replay those first", id, def.Name, ErrInputsPending, strings.Join(pending, ", "))
}

func (e *Runtime) send(ctx context.Context, j baton.Job, key ledger.ItemKey, fence int64) error {
	msg := message.New(key, fence, jobspec.IsDerived(j, key.Asset)).QueueMessage()
	// Through the router: a job with a queue of its own gets it there.
	if _, err := queue.SendAll(ctx, e.router, []queue.Message{msg}, nil); err != nil {
		return fmt.Errorf("enqueue %s: %w", key, err)
	}
	return nil
}

// replayGeneration is ReplayItem's forced path on a terminal item: under
// the job's lease it opens the tick's next generation, plans it
// (planGeneration), copies it (copyGeneration) and marks it fanned out.
func (e *Runtime) replayGeneration(ctx context.Context, j baton.Job, run ledger.Run, asset string, rep ItemReplay) (ItemReplay, error) {
	if !run.State.Finished() {
		return rep, fmt.Errorf("replay %s: run %s is %s: %w (wait for it, or cancel it)", rep.Key, run.ID, run.State, ErrRunInFlight)
	}
	lim := j.Limits
	start := e.now()
	owner := fmt.Sprintf("%s/replay#%d", e.opts.Owner, replays.Add(1))
	l, err := e.backend.Leases.Acquire(ctx, lease.AcquireParams{Job: j.Name, Owner: owner, TTL: lim.LeaseTTL, Now: start, Skew: lim.ClockSkew})
	if err != nil {
		return rep, fmt.Errorf("replay %s: acquire lease: %w", rep.Key, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = e.backend.Leases.Release(rctx, lease.ReleaseParams{Job: j.Name, Owner: owner, Fence: l.Fence})
	}()
	next, outcome, err := e.backend.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Nominal: run.ID.Nominal, Fence: l.Fence, Force: true,
		Shards: fanin.Shards(len(j.Assets) + len(j.Derived)), Now: e.now()})
	if err != nil {
		return rep, fmt.Errorf("replay %s: open the next generation: %w", rep.Key, err)
	}
	if outcome != ledger.Opened {
		return rep, fmt.Errorf("replay %s: open the next generation: outcome %s", rep.Key, outcome)
	}
	rep.Outcome, rep.Fence = ItemNewGeneration, l.Fence
	rep.Key = ledger.ItemKey{Run: next.ID, Asset: asset}

	old, err := e.backend.Ledger.ListItems(ctx, run.ID)
	if err != nil {
		return rep, fmt.Errorf("replay %s: list %s: %w", rep.Key, run.ID, err)
	}
	plan := planGeneration(j, asset, old)
	rep.Carried = map[string]ledger.ItemState{}
	g := &generationGuard{e: e, job: j, owner: owner, fence: l.Fence, run: next.ID, checked: start}
	if err := e.copyGeneration(ctx, g, plan, &rep); err != nil {
		return rep, fmt.Errorf("replay %s: %w (%s is left fanning out; 'baton replay tick' of the tick resumes it)", rep.Key, err, next.ID)
	}
	if _, err := e.backend.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: next.ID, Fence: l.Fence, Cursor: len(j.Assets), Done: true, Now: e.now()}); err != nil {
		return rep, fmt.Errorf("replay %s: mark %s fanned out: %w", rep.Key, next.ID, err)
	}
	return rep, nil
}

// generationPlan is what a forced replay does with each item of the
// generation it replays.
type generationPlan struct {
	carry []ledger.Item // the terminal items whose outcome is carried over
	send  []string      // catalog assets and the item itself, enqueued after the carry-over
	rerun []string      // the items that run again (ItemReplay.Rerun)
}

// planGeneration decides, for each item of j in name order, whether the
// next generation carries its outcome in old over or runs it again: the
// replayed asset and the derived items downstream of it (Job.Downstream) run again,
// and so does an item with no terminal outcome in old (which cannot happen
// in a finished run, short of a manual edit); every other item is carried
// over. Of the items that run again, the catalog assets and the replayed
// item are sent; the other derived items wait for fan-in.
func planGeneration(j baton.Job, asset string, old []ledger.Item) generationPlan {
	byName := make(map[string]ledger.Item, len(old))
	for _, it := range old {
		byName[it.Key.Asset] = it
	}
	p := generationPlan{rerun: []string{asset}}
	for _, d := range jobspec.Downstream(j, asset) {
		p.rerun = append(p.rerun, d.Name)
	}
	for _, name := range SortedItemNames(j) {
		prev, ok := byName[name]
		switch {
		case slices.Contains(p.rerun, name):
			if name == asset || !jobspec.IsDerived(j, name) {
				p.send = append(p.send, name)
			}
		case !ok || !prev.State.Terminal():
			if !jobspec.IsDerived(j, name) {
				p.send = append(p.send, name)
			}
			p.rerun = append(p.rerun, name)
		default:
			p.carry = append(p.carry, prev)
		}
	}
	return p
}

// copyGeneration fills the generation g guards as planned: it carries
// each outcome over (recording it in rep.Carried), sets rep.Rerun, then
// enqueues the items to send, checking g before each item. An error stops
// it half-way.
func (e *Runtime) copyGeneration(ctx context.Context, g *generationGuard, plan generationPlan, rep *ItemReplay) error {
	for _, prev := range plan.carry {
		name := prev.Key.Asset
		if err := g.check(ctx); err != nil {
			return err
		}
		if err := e.carry(ctx, g.job, g.fence, g.owner, ledger.ItemKey{Run: g.run, Asset: name}, prev); err != nil {
			return err
		}
		rep.Carried[name] = prev.State
	}
	rep.Rerun = plan.rerun
	for _, name := range plan.send {
		if err := g.check(ctx); err != nil {
			return err
		}
		if err := e.send(ctx, g.job, ledger.ItemKey{Run: g.run, Asset: name}, g.fence); err != nil {
			return err
		}
	}
	return nil
}

// replayCheckEvery is how many items a forced replay copies or enqueues
// between two checks of its lease (it also checks once half the lease's
// TTL has gone, whichever comes first).
const replayCheckEvery = 16

// generationGuard keeps a forced replay's hold on the new generation while
// it copies: it renews the job's lease, and checks with a fenced write that
// the run is still fanning out under the replay's fence.
type generationGuard struct {
	e       *Runtime
	job     baton.Job
	owner   string
	fence   int64
	run     ledger.RunID
	checked time.Time // time of the acquisition or the latest renewal
	since   int       // items handled since then
}

// check is called before each item. When replayCheckEvery items have
// passed, or half the lease's TTL, it renews the lease (ErrNotHolder when
// it expired or another coordinator took it: the caller must stop) and
// advances the run by nothing under the replay's fence (ErrConflict when a
// newer coordinator resumed it).
func (g *generationGuard) check(ctx context.Context) error {
	now := g.e.now()
	if g.since < replayCheckEvery && now.Sub(g.checked) < g.job.Limits.LeaseTTL/2 {
		g.since++
		return nil
	}
	if _, err := g.e.backend.Leases.Renew(ctx, lease.RenewParams{Job: g.job.Name, Owner: g.owner, Fence: g.fence, TTL: g.job.Limits.LeaseTTL, Now: now}); err != nil {
		return fmt.Errorf("renew the job's lease (fence %d): %w", g.fence, err)
	}
	if _, err := g.e.backend.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: g.run, Fence: g.fence, Cursor: 0, Now: now}); err != nil {
		return fmt.Errorf("check %s is still fanning out under fence %d: %w", g.run, g.fence, err)
	}
	g.checked, g.since = now, 1
	return nil
}

// carry writes prev's terminal outcome as key's, with the port's own
// transitions: claim then complete (SUCCEEDED) or fail permanently (DEAD),
// or cancel (CANCELLED).
//
// Key must have no record: the replay created its generation. Claim
// refuses a live claim, and a claim that finds an earlier attempt (the
// generation was resumed and run meanwhile) is released and reported with
// ErrConflict. Cancel, though, also moves RUNNING and FAILED items, so a
// CANCELLED outcome is written only when GetItem finds no record; a claim
// landing between that read and the cancel (a newer coordinator resumed
// the generation within those two calls, despite the lease) is cancelled,
// and reported with ErrConflict: the Cancel result then carries its attempt.
func (e *Runtime) carry(ctx context.Context, j baton.Job, fence int64, owner string, key ledger.ItemKey, prev ledger.Item) error {
	now := e.now()
	reason := fmt.Sprintf("carried over from %s", prev.Key.Run)
	if prev.Error != "" {
		reason += ": " + prev.Error
	}
	if prev.State == ledger.ItemCancelled {
		cur, err := e.backend.Ledger.GetItem(ctx, key)
		switch {
		case err == nil:
			return fmt.Errorf("carry %s over: it already has a record (%s, attempt %d, owner %q): %w", key, cur.State, cur.Attempt, cur.Owner, ledger.ErrConflict)
		case !errors.Is(err, ledger.ErrNotFound):
			return fmt.Errorf("carry %s over: %w", key, err)
		}
		it, err := e.backend.Ledger.Cancel(ctx, ledger.CancelParams{Key: key, Reason: reason, Now: now})
		if err != nil {
			return fmt.Errorf("carry %s over: %w", key, err)
		}
		if it.Attempt > 0 {
			return fmt.Errorf("carry %s over: claimed by %q (attempt %d) just before the cancel, which cancelled it: %w", key, it.Owner, it.Attempt, ledger.ErrConflict)
		}
		return nil
	}
	it, err := e.backend.Ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: owner, LeaseUntil: now.Add(j.Limits.ItemLease),
		Fence: fence, Skew: j.Limits.ClockSkew, Now: now})
	if err != nil {
		return fmt.Errorf("carry %s over: claim: %w", key, err)
	}
	if it.Attempt != 1 {
		_, _ = e.backend.Ledger.Release(ctx, ledger.ReleaseParams{Key: key, Owner: owner, Attempt: it.Attempt, Now: e.now()})
		return fmt.Errorf("carry %s over: it was already claimed (this claim is attempt %d; released): %w", key, it.Attempt, ledger.ErrConflict)
	}
	if prev.State == ledger.ItemSucceeded {
		_, err = e.backend.Ledger.Complete(ctx, ledger.CompleteParams{Key: key, Owner: owner, Attempt: it.Attempt, Result: prev.Result, Now: e.now()})
	} else {
		_, err = e.backend.Ledger.Fail(ctx, ledger.FailParams{Key: key, Owner: owner, Attempt: it.Attempt, Reason: reason, Permanent: true, Now: e.now()})
	}
	if err != nil {
		return fmt.Errorf("carry %s over: %w", key, err)
	}
	return nil
}
