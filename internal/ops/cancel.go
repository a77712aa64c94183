package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// CancelParams are the inputs of Cancel.
type CancelParams struct {
	Run ledger.RunID // the run: its tick's current generation
	// Item, optional, cancels only this item ("": every item of the run
	// not terminal yet).
	Item string
	// Reason is stored with each cancelled item; "" means "cancelled by
	// <Owner>".
	Reason string
}

// CancelResult says what Cancel did.
type CancelResult struct {
	// Items are the items acted on, in name order (Item's alone when set).
	Items []CancelledItem
	// Cancelled counts the items cancelled by this call, AlreadyTerminal
	// those left as they were.
	Cancelled, AlreadyTerminal int
	// Run is the run's record once settled (partial once every item is
	// terminal; still fanning out or fanned out while items are in
	// flight). Zero when Cancel stopped before settling it.
	Run ledger.Run
}

// CancelledItem is one item Cancel acted on.
type CancelledItem struct {
	Item string
	// Before is the item's record before the cancel (State "" when it had
	// none: pending); After its record now.
	Before, After ledger.Item
	// Changed is true when this call cancelled it; false when it was
	// already terminal (SUCCEEDED, DEAD or CANCELLED) and left as it was.
	Changed bool
}

// ErrItemTerminal matches Cancel's refusal of a named item that already
// ended SUCCEEDED or DEAD (a CANCELLED one is no refusal: it is what was
// asked). The error is an *ItemTerminalError.
var ErrItemTerminal = errors.New("item already terminal")

// ItemTerminalError reports the terminal item that refused a cancel.
type ItemTerminalError struct{ Item ledger.Item }

func (e *ItemTerminalError) Error() string {
	return fmt.Sprintf("%s is already %s; terminal items are never overwritten", e.Item.Key, e.Item.State)
}

// Is makes errors.Is(err, ErrItemTerminal) true.
func (e *ItemTerminalError) Is(target error) bool { return target == ErrItemTerminal }

// Cancel cancels the items of run p.Run (its tick's current generation)
// that are not terminal yet, or only p.Item: pending (no record), RUNNING
// and FAILED items become CANCELLED, one conditional write each; items
// already SUCCEEDED, DEAD or CANCELLED are left as they are. Then it
// settles the run (derived items whose input is cancelled are cancelled
// by fan-in; once every item is terminal the run is partial).
//
// Refusals, before anything is written: a run that does not exist
// (*UnknownRunError), an older generation (*SupersededError), an item the
// job (or the run's stored list) does not have (ErrUnknownItem). A named
// item that had already ended SUCCEEDED or DEAD is reported, after the
// run is settled, with an *ItemTerminalError beside the result.
func (o *Operator) Cancel(ctx context.Context, p CancelParams) (CancelResult, error) {
	var res CancelResult
	j, err := o.job(p.Run.Job)
	if err != nil {
		return res, err
	}
	stored := p.Run.Submitted() || jobspec.RunTime(j) // the run's items are its stored list
	if p.Item != "" && !stored && !j.HasItem(p.Item) {
		return res, unknownItem("unknown asset %q: job %s has no such asset or derived item", p.Item, j.Name)
	}
	reason := p.Reason
	if reason == "" {
		reason = "cancelled by " + o.o.Owner
	}
	if _, err := o.currentRun(ctx, p.Run); err != nil {
		return res, err
	}
	targets := exec.SortedItemNames(j)
	if stored {
		// Memory grows with the list here: an operator's cancel of a very
		// large run is rare, and each item is one write anyway.
		if targets, err = StoredNames(ctx, o.b.Ledger, p.Run); err != nil {
			return res, err
		}
		if p.Item != "" && !slices.Contains(targets, p.Item) {
			return res, unknownItem("run %s has no item %q in its stored list", p.Run, p.Item)
		}
	}
	if p.Item != "" {
		targets = []string{p.Item}
	}
	var refused error
	for _, name := range targets {
		key := ledger.ItemKey{Run: p.Run, Asset: name}
		before, err := o.b.Ledger.GetItem(ctx, key)
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return res, fmt.Errorf("cancel %s: %w", key, err)
		}
		it, err := o.b.Ledger.Cancel(ctx, ledger.CancelParams{Key: key, Reason: reason, Now: o.now()})
		switch {
		case errors.Is(err, ledger.ErrTerminal):
			res.AlreadyTerminal++
			res.Items = append(res.Items, CancelledItem{Item: name, Before: before, After: it})
			if p.Item != "" && it.State != ledger.ItemCancelled {
				refused = &ItemTerminalError{Item: it}
			}
		case err != nil:
			return res, fmt.Errorf("cancel %s: %w", key, err)
		default:
			res.Cancelled++
			res.Items = append(res.Items, CancelledItem{Item: name, Before: before, After: it, Changed: true})
		}
	}
	eng, err := o.engine()
	if err != nil {
		return res, err
	}
	if res.Run, err = eng.Coordinator.SettleRun(ctx, p.Run); err != nil {
		return res, fmt.Errorf("settle %s: %w", p.Run, err)
	}
	return res, refused
}

// StoredNames returns the names of the stored item list of run id (a
// submission's, a run-time list's), page by page; a list not stored
// whole yet gives the names stored so far.
func StoredNames(ctx context.Context, l ledger.Store, id ledger.RunID) ([]string, error) {
	var names []string
	for p := 0; ; p++ {
		pg, err := l.GetPage(ctx, id, p)
		if errors.Is(err, ledger.ErrNotFound) {
			return names, nil // not stored whole yet
		}
		if err != nil {
			return nil, fmt.Errorf("read the item list of %s: %w", id, err)
		}
		names = append(names, pg.Names()...)
		if pg.Final {
			return names, nil
		}
	}
}
