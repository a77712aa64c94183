package ops

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// ItemReplay says what ReplayItem did (see exec.ItemReplay and its
// outcomes exec.ItemEnqueued, exec.ItemAlreadyTerminal and
// exec.ItemNewGeneration).
type ItemReplay = exec.ItemReplay

// Refusals of ReplayItem, besides *UnknownRunError and *SupersededError.
var (
	// ErrItemHeld: the item is RUNNING under a live claim and force was
	// not set (an *exec.ItemHeldError, with the claim).
	ErrItemHeld = exec.ErrItemHeld
	// ErrRunInFlight: force on a terminal item of a run that has not
	// settled.
	ErrRunInFlight = exec.ErrRunInFlight
	// ErrInputsPending: a derived item some of whose inputs have not
	// ended (and none ended without success).
	ErrInputsPending = exec.ErrInputsPending
)

// ReplayItem sends item asset of run id (its tick's current generation)
// again, as the coordinator's fan-out would; with force, a held item is
// enqueued anyway and a terminal one re-runs in the tick's next
// generation (exec.Runtime.ReplayItem says how). It returns once the
// message is sent: the consumers run it.
func (o *Operator) ReplayItem(ctx context.Context, id ledger.RunID, asset string, force bool) (ItemReplay, error) {
	if _, err := o.currentRun(ctx, id); err != nil {
		return ItemReplay{}, err
	}
	eng, err := o.engine()
	if err != nil {
		return ItemReplay{}, err
	}
	return eng.ReplayItem(ctx, id, asset, force)
}

// TickReplayParams are the inputs of ReplayTick.
type TickReplayParams struct {
	Job     string
	Nominal time.Time // the tick: a nominal time of the job's schedule
	// Force opens the tick's next generation even if the tick already
	// ran (every item runs again); it also runs a tick of a paused job.
	Force bool
	// LeaseWait is how long to keep retrying while another coordinator
	// holds the job's lease and the tick is still pending (0: once).
	LeaseWait time.Duration
}

// ReplayTick runs the coordinator for the tick p.Nominal of p.Job as the
// schedule would, until its fan-out is complete (a fan-out stopped by the
// deadline or budget is resumed at once), retrying with jittered backoff
// while another coordinator holds the lease and the tick is still
// pending, up to p.LeaseWait. It returns the last summary: Outcome
// OutcomeSkipped with Pending when the lease stayed held (Holder says by
// whom), OutcomeSkipped without Pending when the tick was fanned out by
// someone else, OutcomePaused when the job is paused and Force is not set,
// OutcomeAlreadyFannedOut when the tick's run is fanned out or finished.
// It returns once the messages are sent: the consumers run them.
func (o *Operator) ReplayTick(ctx context.Context, p TickReplayParams) (coordinator.Summary, error) {
	eng, err := o.engine()
	if err != nil {
		return coordinator.Summary{}, err
	}
	force := p.Force
	backoff := 100 * time.Millisecond
	deadline := o.now().Add(p.LeaseWait)
	for {
		sum, err := eng.Trigger(ctx, p.Job, p.Nominal, force)
		if err != nil {
			return sum, err
		}
		switch {
		case sum.Outcome == coordinator.OutcomePaused:
			return sum, nil
		case sum.Outcome == coordinator.OutcomeSkipped && !sum.Pending:
			return sum, nil // the tick is fanned out already: nothing to retry
		case sum.Outcome == coordinator.OutcomeSkipped:
			if o.now().Add(backoff).After(deadline) {
				return sum, nil
			}
		case sum.Stopped != "":
			force = false // the new generation is open: resume it
			backoff = 0
		default:
			return sum, nil
		}
		if err := Sleep(ctx, Jitter(backoff)); err != nil {
			return sum, err
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
	}
}

// Jitter returns a wait in [d/2, d]: contenders retrying the same lease
// spread out instead of colliding again in lockstep.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx is done, and returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
