package fanin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// SettleParams are the inputs of Settle.
type SettleParams struct {
	Ledger ledger.Store
	// Queue receives derived items found ready that never ran; nil:
	// nothing is enqueued.
	Queue queue.Sender
	Def   baton.Job
	Run   ledger.Run // as read: Settle acts only on a run fanned out
	Now   time.Time
}

// Settle finishes run when every item of it has ended: a run fanned out
// whose assets (the first Total of the job's) and derived items are all
// terminal becomes complete (all SUCCEEDED) or partial, with its counts.
// Before that, the fan-in check runs over the run's items: derived items
// whose inputs ended DEAD or CANCELLED are cancelled, so that a run always
// settles, and those whose inputs all SUCCEEDED but which never ran are
// enqueued again (the last resort when every input's own check failed).
// It returns the run as it is after the call: unchanged when it is not
// fanned out or has items in flight; as someone else finished it when the
// finish finds it terminal.
func Settle(ctx context.Context, p SettleParams) (ledger.Run, error) {
	run := p.Run
	if run.State != ledger.RunFannedOut {
		return run, nil
	}
	items, err := p.Ledger.ListItems(ctx, run.ID)
	if err != nil {
		return run, fmt.Errorf("settle %s: %w", run.ID, err)
	}
	if items == nil {
		items = []ledger.Item{}
	}
	res, err := Check(ctx, Params{Ledger: p.Ledger, Queue: p.Queue, Def: p.Def, Run: run.ID, Fence: run.Fence, Items: items, Now: p.Now})
	if err != nil {
		return run, fmt.Errorf("settle %s: %w", run.ID, err)
	}
	if len(res.Cancelled) > 0 {
		if items, err = p.Ledger.ListItems(ctx, run.ID); err != nil {
			return run, fmt.Errorf("settle %s: %w", run.ID, err)
		}
	}
	fp, settled := finishCounts(p.Def, run, items)
	if !settled {
		return run, nil // in flight
	}
	fp.Now = p.Now
	fin, err := p.Ledger.FinishRun(ctx, fp)
	if errors.Is(err, ledger.ErrTerminal) {
		return fin, nil // settled by someone else meanwhile
	}
	if err != nil {
		return run, fmt.Errorf("settle %s: finish: %w", run.ID, err)
	}
	return fin, nil
}

// finishCounts decides whether run can finish: it can when every item of
// the run (the first run.Total assets of the job, then the derived items)
// is terminal in items. It then returns the FinishRun parameters with the
// counts, Now unset.
func finishCounts(j baton.Job, run ledger.Run, items []ledger.Item) (ledger.FinishRunParams, bool) {
	states := make(map[string]ledger.ItemState, len(items))
	for _, it := range items {
		states[it.Key.Asset] = it.State
	}
	// A run counts the assets the job had when it was fanned out.
	names := slices.Delete(j.ItemNames(), min(run.Total, len(j.Assets)), len(j.Assets))
	p := ledger.FinishRunParams{ID: run.ID}
	for _, n := range names {
		switch states[n] {
		case ledger.ItemSucceeded:
			p.Succeeded++
		case ledger.ItemDead:
			p.Dead++
		case ledger.ItemCancelled:
			p.Cancelled++
		default:
			return p, false
		}
	}
	return p, true
}
