package batonclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ops"
)

// The operator's actions: the calls behind 'baton cancel', 'baton pause',
// 'baton resume', 'baton dlq redrive', 'baton lease release' and 'baton
// replay', with the same guards. Refusals are errors matching the
// sentinels below (errors.Is); their text names what refused.
var (
	// ErrSuperseded: the run named is an older generation of its tick;
	// act on the current one.
	ErrSuperseded = ops.ErrSuperseded
	// ErrUnknownItem: the run's job (or its stored list) has no item of
	// that name.
	ErrUnknownItem = ops.ErrUnknownItem
	// ErrItemTerminal: CancelItem of an item that already ended SUCCEEDED
	// or DEAD; terminal items are never overwritten.
	ErrItemTerminal = ops.ErrItemTerminal
	// ErrCannotPause: the engine's lease store cannot pause jobs.
	ErrCannotPause = ops.ErrCannotPause
	// ErrNoDeadLetterQueue: the engine has no dead-letter queue
	// configured (on aws: Options.DLQURL).
	ErrNoDeadLetterQueue = ops.ErrNoDeadLetterQueue
	// ErrNoLease: the job has no lease record (its coordinator never ran).
	ErrNoLease = ops.ErrNoLease
	// ErrLeaseChanged: the lease is not held by the owner and fence
	// named: it changed hands since they were read (Lease).
	ErrLeaseChanged = ops.ErrLeaseChanged
	// ErrLeaseLive: ReleaseLease of a live lease without ForceLive. Its
	// holder may be slow, not dead: an expired lease is taken over by the
	// next trigger anyway, so waiting is safe.
	ErrLeaseLive = ops.ErrLeaseLive
	// ErrLeaseHeld: another coordinator holds the job's lease (a replay
	// that must take it: ReplayTick, ReplayItem's new generation); try
	// again once it is done.
	ErrLeaseHeld = lease.ErrHeld
	// ErrItemHeld: ReplayItem of an item RUNNING under a live claim
	// without force; its worker may still finish it.
	ErrItemHeld = ops.ErrItemHeld
	// ErrRunNotSettled: ReplayItem with force of a terminal item of a run
	// that has not settled (the outcomes the next generation carries over
	// are not known yet).
	ErrRunNotSettled = ops.ErrRunInFlight
	// ErrInputsPending: ReplayItem of a derived item some of whose inputs
	// have not ended; fan-in enqueues it once they have.
	ErrInputsPending = ops.ErrInputsPending
	// ErrPaused: ReplayTick of a paused job's tick without force.
	ErrPaused = errors.New("job paused")
)

// operator returns the actions on the client's engine.
func (c *Client) operator() (*ops.Operator, error) {
	return ops.New(c.b, c.eng.Catalog(), &ops.Options{Engine: c.eng})
}

// notFound makes an unknown run's error match ErrNotFound too.
func notFound(err error) error {
	if errors.Is(err, ops.ErrUnknownRun) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// Cancelled says what Cancel or CancelItem did.
type Cancelled struct {
	// Items are the items acted on, in name order.
	Items []CancelledItem
	// Cancelled counts the items this call cancelled, AlreadyTerminal
	// those it left as they were.
	Cancelled, AlreadyTerminal int
	// Run is the run's status once settled: partial once every item is
	// terminal, else still in flight.
	Run RunStatus
}

// CancelledItem is one item Cancel acted on.
type CancelledItem struct {
	Item string
	// Was is its state before ("PENDING" when it had not started), Now
	// its state after.
	Was, Now string
	// Changed is true when this call cancelled it.
	Changed bool
}

// Cancel cancels the items of run (its tick's current generation) that
// are not terminal yet, as 'baton cancel' does: pending, RUNNING and
// FAILED items become CANCELLED, each with reason ("" names the client's
// owner); SUCCEEDED, DEAD and CANCELLED items are left as they are. A
// processor running a cancelled item has its context cancelled at its
// next heartbeat, and whatever it returns is refused; derived items whose
// input is cancelled are cancelled too. A run that does not exist gives
// an error matching ErrNotFound; an older generation one matching
// ErrSuperseded.
func (c *Client) Cancel(ctx context.Context, run baton.RunID, reason string) (Cancelled, error) {
	return c.cancel(ctx, run, "", reason)
}

// CancelItem is Cancel for the one item of run called item. An item that
// already ended SUCCEEDED or DEAD is left as it is and the call returns,
// with the result, an error matching ErrItemTerminal; cancelling a
// CANCELLED item again is no error.
func (c *Client) CancelItem(ctx context.Context, run baton.RunID, item, reason string) (Cancelled, error) {
	if item == "" {
		return Cancelled{}, fmt.Errorf("cancel %s: %w: no item named", run, ErrUnknownItem)
	}
	return c.cancel(ctx, run, item, reason)
}

func (c *Client) cancel(ctx context.Context, run baton.RunID, item, reason string) (Cancelled, error) {
	op, err := c.operator()
	if err != nil {
		return Cancelled{}, err
	}
	res, err := op.Cancel(ctx, ops.CancelParams{Run: run, Item: item, Reason: reason})
	out := Cancelled{Cancelled: res.Cancelled, AlreadyTerminal: res.AlreadyTerminal}
	for _, it := range res.Items {
		was := ops.Pending
		if it.Before.State != "" {
			was = string(it.Before.State)
		}
		if !it.Changed {
			was = string(it.After.State)
		}
		out.Items = append(out.Items, CancelledItem{Item: it.Item, Was: was, Now: string(it.After.State), Changed: it.Changed})
	}
	if res.Run.ID.Job != "" {
		out.Run = runStatus(res.Run)
	}
	return out, notFound(err)
}

// runStatus is the RunStatus of a run record.
func runStatus(run ledger.Run) RunStatus {
	return RunStatus{
		Run: run.ID, State: string(run.State), Finished: run.State.Finished(),
		Succeeded: run.Succeeded, Dead: run.Dead, Cancelled: run.Cancelled,
		OpenedAt: run.OpenedAt, FinishedAt: run.FinishedAt,
	}
}

// PauseState is a job's pause record, as Pause and Resume leave it.
type PauseState struct {
	Job    string
	Paused bool
	// Changed is false when the job already was as asked (pausing a
	// paused job, resuming one that is not): nothing was written.
	Changed bool
	// Since is when the latest pause began, Until when it ended (zero
	// while paused).
	Since, Until time.Time
	By, Reason   string
	// Skipped counts the ticks skipped during the latest pause; the
	// newest of them is LastSkipped.
	Skipped     int64
	LastSkipped time.Time
}

// Pause pauses job, as 'baton pause' does: from now on its coordinator
// skips the job's scheduled ticks and records each one; runs in flight
// finish. reason "" names the client's owner. Pausing a paused job
// changes nothing (Changed false).
func (c *Client) Pause(ctx context.Context, job, reason string) (PauseState, error) {
	return c.setPause(ctx, job, true, reason)
}

// Resume ends job's pause, as 'baton resume' does: its next scheduled
// tick runs; the ticks skipped stay skipped (ReplayTick runs one if
// needed). Resuming a job that is not paused changes nothing (Changed
// false).
func (c *Client) Resume(ctx context.Context, job, reason string) (PauseState, error) {
	return c.setPause(ctx, job, false, reason)
}

func (c *Client) setPause(ctx context.Context, job string, paused bool, reason string) (PauseState, error) {
	op, err := c.operator()
	if err != nil {
		return PauseState{}, err
	}
	set := op.Resume
	if paused {
		set = op.Pause
	}
	res, err := set(ctx, job, reason)
	if err != nil {
		return PauseState{}, err
	}
	p := res.After
	return PauseState{Job: res.Job, Paused: p.Paused, Changed: res.Changed, Since: p.Since, Until: p.Until,
		By: p.By, Reason: p.Reason, Skipped: p.Skipped, LastSkipped: p.LastSkipped}, nil
}

// Redriven says what Redrive did.
type Redriven struct {
	// Moved is the number of messages moved back to the work queue.
	Moved int
	// Left is what the dead-letter queue still holds (in flight, or
	// beyond max), when LeftKnown: the queue could be counted.
	Left      int
	LeftKnown bool
}

// Redrive moves dead letters back to the work queue, oldest first, as
// 'baton dlq redrive' does: all of them (max 0) or at most max. Each keeps
// its idempotency key: items that meanwhile SUCCEEDED, ended DEAD or were
// CANCELLED are acknowledged without running; the others run. A failure
// half-way returns the count moved so far with the error.
func (c *Client) Redrive(ctx context.Context, max int) (Redriven, error) {
	op, err := c.operator()
	if err != nil {
		return Redriven{}, err
	}
	res, err := op.Redrive(ctx, max)
	return Redriven{Moved: res.Moved, Left: res.Left.Messages, LeftKnown: res.Left.Known}, err
}

// Lease is a job's coordinator lease record.
type Lease struct {
	Job   string
	Owner string // "" when free
	Fence int64  // the fence of the latest acquisition
	// ExpiresAt is when the holder's lease ends (zero when free);
	// AcquiredAt when it was taken.
	ExpiresAt, AcquiredAt time.Time
	// Live is true while the holder's lease runs, the job's clock-skew
	// allowance included.
	Live bool
}

// Lease reads job's coordinator lease (as 'baton lease show' does): the
// owner and fence that ReleaseLease names. A job whose coordinator never
// ran gives an error matching ErrNoLease.
func (c *Client) Lease(ctx context.Context, job string) (Lease, error) {
	j, err := c.eng.Catalog().Lookup(job)
	if err != nil {
		return Lease{}, err
	}
	l, err := c.b.Leases.Inspect(ctx, j.Name)
	if errors.Is(err, lease.ErrNotFound) {
		return Lease{}, fmt.Errorf("job %s has %w (its coordinator never ran)", j.Name, ErrNoLease)
	}
	if err != nil {
		return Lease{}, err
	}
	return leaseOf(l, l.Held(c.eng.Now(), j.Limits.ClockSkew)), nil
}

func leaseOf(l lease.Lease, live bool) Lease {
	return Lease{Job: l.Job, Owner: l.Owner, Fence: l.Fence, ExpiresAt: l.ExpiresAt, AcquiredAt: l.AcquiredAt, Live: live}
}

// ReleaseLeaseParams name the holder ReleaseLease releases.
type ReleaseLeaseParams struct {
	// Owner and Fence are the holder, as Lease read them: both must match
	// the record, or nothing happens (ErrLeaseChanged).
	Owner string
	Fence int64
	// ForceLive releases a live lease too (else ErrLeaseLive). Its holder
	// may be slow, not dead: releasing it lets a second coordinator run
	// beside it. Use it only when the holder is known to be dead.
	ForceLive bool
}

// What ReleaseLease did (LeaseReleased.Outcome).
const (
	LeaseAlreadyFree     = ops.LeaseAlreadyFree     // no holder: nothing written
	LeaseReleasedExpired = ops.LeaseReleasedExpired // expired: taken over (fence+1), then released
	LeaseChangedHands    = ops.LeaseChangedHands    // expired and changed hands meanwhile: taken over and released
	LeaseReleasedLive    = ops.LeaseReleasedLive    // ForceLive: released as it was
)

// LeaseReleased says what ReleaseLease did.
type LeaseReleased struct {
	Outcome string
	// Lease is the record as ReleaseLease found it.
	Lease Lease
	// TakeoverFence is the fence of the takeover released (an expired
	// lease): late writes under Lease.Fence are refused.
	TakeoverFence int64
}

// ReleaseLease releases job's coordinator lease held by p.Owner with
// p.Fence, with the guards of 'baton lease release': an expired lease is
// taken over with one conditional write (the fence moves on, so late
// writes of the dead holder are refused) and released; a live one is
// refused with an error matching ErrLeaseLive unless p.ForceLive; a
// holder other than the one named is refused with ErrLeaseChanged; a job
// without a lease record with ErrNoLease. The record is never deleted.
func (c *Client) ReleaseLease(ctx context.Context, job string, p ReleaseLeaseParams) (LeaseReleased, error) {
	op, err := c.operator()
	if err != nil {
		return LeaseReleased{}, err
	}
	res, err := op.ReleaseLease(ctx, ops.ReleaseParams{Job: job, Owner: p.Owner, Fence: p.Fence, ForceLive: p.ForceLive})
	if err != nil {
		return LeaseReleased{}, err
	}
	return LeaseReleased{Outcome: res.Outcome, Lease: leaseOf(res.Lease, res.Lease.Held(res.Now, res.Skew)), TakeoverFence: res.TakeoverFence}, nil
}

// What ReplayItem did (ItemReplayed.Outcome).
const (
	ItemEnqueued        = exec.ItemEnqueued        // not terminal: its message was sent again
	ItemAlreadyTerminal = exec.ItemAlreadyTerminal // terminal and no force: nothing written
	ItemNewGeneration   = exec.ItemNewGeneration   // force on a terminal item: the tick's next generation runs it again
)

// ItemReplayed says what ReplayItem did.
type ItemReplayed struct {
	Outcome string
	// Run is the run the item was enqueued in: the next generation for
	// ItemNewGeneration, else the run named.
	Run baton.RunID
	// Was is the item's state before ("PENDING" when it had not started).
	Was string
	// Rerun lists, for ItemNewGeneration, the items that run again (the
	// item and the derived items that take it as input); Carried counts
	// the items whose outcome was carried over unchanged.
	Rerun   []string
	Carried int
}

// ReplayItem sends item of run (its tick's current generation) again, as
// 'baton replay item' does; the consumers (Work, or the deployed ones)
// run it. An item not terminal is enqueued, unless it is RUNNING under a
// live claim (ErrItemHeld; force enqueues it anyway). A terminal item is
// left as it is (ItemAlreadyTerminal) unless force, which opens the
// tick's next generation: every other item's outcome is carried over, the
// item and the derived items downstream of it run again (refused with
// ErrRunNotSettled while the run is in flight, ErrLeaseHeld while another
// coordinator holds the job's lease). A derived item whose inputs have
// not ended is refused with ErrInputsPending. The items of a submission
// or of a run-time list cannot be named (replay the submission or the
// tick instead).
func (c *Client) ReplayItem(ctx context.Context, run baton.RunID, item string, force bool) (ItemReplayed, error) {
	op, err := c.operator()
	if err != nil {
		return ItemReplayed{}, err
	}
	if run.Submitted() {
		return ItemReplayed{}, fmt.Errorf("replay %s/%s: the items of a submission cannot be replayed one by one: %w (Replay runs the submission again)", run, item, ErrUnknownItem)
	}
	rep, err := op.ReplayItem(ctx, run, item, force)
	if err != nil {
		return ItemReplayed{}, notFound(err)
	}
	was := ops.Pending
	if rep.Before.State != "" {
		was = string(rep.Before.State)
	}
	return ItemReplayed{Outcome: rep.Outcome, Run: rep.Key.Run, Was: was, Rerun: rep.Rerun, Carried: len(rep.Carried)}, nil
}

// TickReplayed says what ReplayTick did.
type TickReplayed struct {
	// Run is the tick's run: the one opened or resumed, or the one that
	// already ran.
	Run baton.RunID
	// Outcome is "opened" (a new run or generation was fanned out),
	// "resumed" (a run left fanning out was continued) or
	// "already_fanned_out" (the tick's run was fanned out or finished
	// already: nothing was sent; force runs it again).
	Outcome string
	// Enqueued is the number of item messages sent.
	Enqueued int
}

// ReplayTick runs job's tick at or before at again, as 'baton replay
// tick' does: the coordinator takes the job's lease, opens or resumes the
// tick's run and fans it out; the consumers (Work, or the deployed ones)
// run the items. A tick already fanned out is not run again unless force,
// which opens its next generation and re-runs every item. Another
// coordinator holding the lease gives an error matching ErrLeaseHeld
// (after retrying for up to leaseWait); a paused job's tick without force
// one matching ErrPaused.
func (c *Client) ReplayTick(ctx context.Context, job string, at time.Time, force bool, leaseWait time.Duration) (TickReplayed, error) {
	op, err := c.operator()
	if err != nil {
		return TickReplayed{}, err
	}
	j, err := c.eng.Catalog().Lookup(job)
	if err != nil {
		return TickReplayed{}, err
	}
	if !j.Scheduled() {
		return TickReplayed{}, fmt.Errorf("replay tick: job %s has %w: it has no ticks (Replay runs a submission again)", j.Name, baton.ErrNoSchedule)
	}
	sum, err := op.ReplayTick(ctx, ops.TickReplayParams{Job: j.Name, Nominal: at, Force: force, LeaseWait: leaseWait})
	if err != nil {
		return TickReplayed{}, err
	}
	switch {
	case sum.Outcome == coordinator.OutcomePaused:
		return TickReplayed{}, fmt.Errorf("replay tick %s@%s: job %s is %w (Resume ends the pause; force runs the tick anyway)", j.Name, sum.Nominal.UTC().Format(time.RFC3339), j.Name, ErrPaused)
	case sum.Outcome == coordinator.OutcomeSkipped && sum.Pending:
		if sum.Holder != nil {
			return TickReplayed{}, fmt.Errorf("replay tick %s@%s: %w", j.Name, sum.Nominal.UTC().Format(time.RFC3339), &lease.HeldError{Holder: *sum.Holder})
		}
		return TickReplayed{}, fmt.Errorf("replay tick %s@%s: %w", j.Name, sum.Nominal.UTC().Format(time.RFC3339), ErrLeaseHeld)
	case sum.Outcome == coordinator.OutcomeSkipped:
		// Fanned out by another coordinator meanwhile.
		run, err := c.b.Ledger.GetRun(ctx, j.Name, sum.Nominal)
		if err != nil {
			return TickReplayed{}, err
		}
		return TickReplayed{Run: run.ID, Outcome: string(coordinator.OutcomeAlreadyFannedOut)}, nil
	}
	return TickReplayed{Run: sum.Run, Outcome: string(sum.Outcome), Enqueued: sum.Enqueued}, nil
}
