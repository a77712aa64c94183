package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/runstatus"
)

// settleWatch follows runs until they settle, settling them on the way
// (the coordinator's Settle: fan-in cancellations, then complete or
// partial once every item is terminal). It gives up when no item of the
// watched runs has become terminal, and no run has settled, for stall.
type settleWatch struct {
	r     *replayer
	stall time.Duration
	// every is the polling interval; 0 means 100ms.
	every time.Duration

	order    []time.Time
	runs     map[time.Time]ledger.Run
	items    map[time.Time][]ledger.Item
	finished map[time.Time]bool

	terminal     int // terminal items over the watched runs, at the last poll
	settled      int // finished runs, at the last poll
	lastProgress time.Time
}

// add watches the tick at nominal.
func (w *settleWatch) add(nominal time.Time) {
	if w.runs == nil {
		w.runs, w.items, w.finished = map[time.Time]ledger.Run{}, map[time.Time][]ledger.Item{}, map[time.Time]bool{}
	}
	nominal = nominal.UTC()
	if _, ok := w.runs[nominal]; ok {
		return
	}
	w.order = append(w.order, nominal)
	w.runs[nominal] = ledger.Run{}
}

// poll reads every unsettled run once.
func (w *settleWatch) poll(ctx context.Context) error {
	terminal, settled := 0, 0
	for _, n := range w.order {
		if !w.finished[n] {
			run, err := w.r.eng.Coordinator.Settle(ctx, w.r.j.Name, n)
			switch {
			case errors.Is(err, ledger.ErrNotFound):
				continue // not opened yet
			case err != nil:
				return err
			}
			items, err := w.r.b.Ledger.ListItems(ctx, run.ID)
			if err != nil {
				return fmt.Errorf("list items of %s: %w", run.ID, err)
			}
			w.runs[n], w.items[n], w.finished[n] = run, items, run.State.Finished()
		}
		if w.finished[n] {
			settled++
		}
		for _, it := range w.items[n] {
			if it.State.Terminal() {
				terminal++
			}
		}
	}
	now := time.Now()
	if w.lastProgress.IsZero() || terminal > w.terminal || settled > w.settled {
		w.lastProgress = now
	}
	w.terminal, w.settled = terminal, settled
	return nil
}

// done reports whether every watched run settled.
func (w *settleWatch) done() bool { return w.settled == len(w.order) }

// wait polls until every watched run settled, calling onPoll after each
// poll. It returns ctx's error, or a stall error naming a run not settled.
func (w *settleWatch) wait(ctx context.Context, onPoll func()) error {
	return w.until(ctx, onPoll, w.done)
}

// waitRun polls until ready holds for the items of the tick's run (by
// name), or the run settled.
func (w *settleWatch) waitRun(ctx context.Context, nominal time.Time, ready func(map[string]ledger.Item) bool) error {
	nominal = nominal.UTC()
	return w.until(ctx, nil, func() bool {
		if w.finished[nominal] {
			return true
		}
		byName := map[string]ledger.Item{}
		for _, it := range w.items[nominal] {
			byName[it.Key.Asset] = it
		}
		return ready(byName)
	})
}

func (w *settleWatch) until(ctx context.Context, onPoll func(), done func() bool) error {
	every := w.every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	for {
		if err := w.poll(ctx); err != nil {
			return err
		}
		if onPoll != nil {
			onPoll()
		}
		if done() {
			return nil
		}
		if time.Since(w.lastProgress) > w.stall {
			return w.stallError()
		}
		if err := sleep(ctx, every); err != nil {
			return fmt.Errorf("waiting for runs to settle: %w", err)
		}
	}
}

func (w *settleWatch) stallError() error {
	for _, n := range w.order {
		if w.finished[n] {
			continue
		}
		run := w.runs[n]
		if run.ID.Job == "" {
			return fmt.Errorf("no item finished for %s (--timeout): tick %s has no run yet", w.stall, rfc(n))
		}
		counts := runstatus.CountItems(w.items[n], nil)
		return fmt.Errorf("no item finished for %s (--timeout): run %s is %s with %d RUNNING, %d FAILED, %d of %d items terminal "+
			"(are consumers running? 'baton status --run %s')", w.stall, run.ID, run.State, counts["RUNNING"], counts["FAILED"],
			counts["SUCCEEDED"]+counts["DEAD"]+counts["CANCELLED"], len(jobspec.ItemNames(w.r.j)), run.ID)
	}
	return fmt.Errorf("no item finished for %s (--timeout)", w.stall)
}

// last returns what the last poll saw of the tick.
func (w *settleWatch) last(nominal time.Time) (ledger.Run, []ledger.Item) {
	n := nominal.UTC()
	return w.runs[n], w.items[n]
}
