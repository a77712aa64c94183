package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/engine"
	"github.com/batonhq/baton/internal/ledger"
)

const cancelSynopsis = `cancel --run R [--asset A] [--reason TEXT] [flags]

Cancels the items of run R (its current generation) that are not terminal
yet: pending (no record), RUNNING or FAILED items become CANCELLED, one
conditional write each. CANCELLED is terminal: no later claim, completion,
retry or redelivery overwrites it, and the item's messages are acknowledged
without running. Items already SUCCEEDED or DEAD are left as they are.
A derived item whose input is cancelled is cancelled too, and so on down
the graph of derived items; once every item is terminal the run settles
as partial.

A processor running a cancelled item has its context cancelled (cause
baton.ErrCancelled) at its next heartbeat or at the runtime's own check
of its claim, within a third of the item's lease; whatever it returns
then is refused. To run the tick again later: baton replay tick --force.

With --asset only that item is cancelled; exit status 1 if it had already
SUCCEEDED or ended DEAD (nothing changed).`

func cancelCommand() command {
	return command{synopsis: cancelSynopsis, summary: "cancel a run's items (or one item) that are not terminal",
		example: "  baton cancel --run fx@2026-11-21T12:01:00Z#1 --reason 'bad upstream data'\n  baton cancel --run fx@2026-11-21T12:01:00Z#1 --asset DXY --json",
		backend: true, defineFunc: defineCancel}
}

func defineCancel(e *env, fs *pflag.FlagSet) runFunc {
	var run, asset, reason string
	fs.StringVar(&run, "run", "", "the run (e.g. fx@2026-11-21T12:01:00Z#1)")
	fs.StringVar(&asset, "asset", "", "only this asset or derived item")
	fs.StringVar(&reason, "reason", "", "why (stored with each cancelled item; default names the operator)")
	return func(ctx context.Context, _ []string) error { return cancel(ctx, e, run, asset, reason) }
}

func cancel(ctx context.Context, e *env, run, asset, reason string) error {
	common := &e.backend
	var explicitAsset bool
	id, j, err := parseRun(e.catalog, run)
	if err != nil {
		return err
	}
	if explicitAsset = asset != ""; explicitAsset {
		if err := checkAsset(j, asset); err != nil {
			return err
		}
	}
	if reason == "" {
		reason = "cancelled by " + operatorOwner()
	}
	b, err := common.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	_, err = currentRun(ctx, b.Ledger, id)
	if errors.Is(err, errSuperseded) {
		return usagef("%v: cancel that run instead", err)
	}
	if err != nil {
		return err
	}
	targets := engine.SortedItemNames(j)
	if explicitAsset {
		targets = []string{asset}
	}

	tw := tabwriter.NewWriter(e.text(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tWAS\tNOW")
	type change struct {
		Item    string `json:"item"`
		Was     string `json:"was"`
		Now     string `json:"now"`
		Changed bool   `json:"changed"`
	}
	var changes []change
	var cancelled, kept int
	var refused error
	for _, name := range targets {
		key := ledger.ItemKey{Run: id, Asset: name}
		before, err := b.Ledger.GetItem(ctx, key)
		was := pending
		if err == nil {
			was = describeItem(before)
		} else if !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		it, err := b.Ledger.Cancel(ctx, ledger.CancelParams{Key: key, Reason: reason, Now: time.Now()})
		switch {
		case errors.Is(err, ledger.ErrTerminal):
			kept++
			fmt.Fprintf(tw, "%s\t%s\tunchanged (terminal)\n", name, it.State)
			changes = append(changes, change{Item: name, Was: string(it.State), Now: string(it.State)})
			if explicitAsset && it.State != ledger.ItemCancelled {
				refused = fmt.Errorf("refused: %s is already %s; terminal items are never overwritten", key, it.State)
			}
		case err != nil:
			tw.Flush()
			return fmt.Errorf("cancel %s: %w", key, err)
		default:
			cancelled++
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, was, it.State)
			changes = append(changes, change{Item: name, Was: was, Now: string(it.State), Changed: true})
		}
	}
	tw.Flush()

	eng, err := engine.New(b, engine.Options{Catalog: e.catalog, Owner: operatorOwner()})
	if err != nil {
		return err
	}
	settled, err := eng.Coordinator.Settle(ctx, j.Name, id.Nominal)
	if err != nil {
		return fmt.Errorf("settle %s: %w", id, err)
	}
	line := fmt.Sprintf("%d cancelled, %d already terminal; run %s is %s", cancelled, kept, settled.ID, settled.State)
	switch settled.State {
	case ledger.RunFanningOut:
		line += " (its fan-out goes on; the cancelled items' messages are acknowledged without running)"
	case ledger.RunFannedOut:
		line += " (items in flight remain)"
	}
	e.sayf("%s\n", line)
	e.set("items", changes)
	e.set("cancelled", cancelled)
	e.set("already_terminal", kept)
	e.set("run", newRunStatus(settled, nil, nil))
	return refused
}

// describeItem is an item's state with who holds it, for before/after lines.
func describeItem(it ledger.Item) string {
	switch it.State {
	case ledger.ItemRunning:
		return fmt.Sprintf("RUNNING (%s, attempt %d)", it.Owner, it.Attempt)
	case ledger.ItemFailed:
		return fmt.Sprintf("FAILED (attempt %d)", it.Attempt)
	}
	return string(it.State)
}
