package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

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

func cancelCmd(ctx context.Context, e *env, args []string) error {
	var (
		common        backendFlags
		run, asset    string
		reason        string
		explicitAsset bool
	)
	fs := newFlagSet(e, "cancel", cancelSynopsis)
	common.register(fs)
	fs.StringVar(&run, "run", "", "the run (e.g. fx@2026-11-21T12:01:00Z#1)")
	fs.StringVar(&asset, "asset", "", "only this asset or derived item")
	fs.StringVar(&reason, "reason", "", "why (stored with each cancelled item; default names the operator)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
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

	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tWAS\tNOW")
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
			if explicitAsset && it.State != ledger.ItemCancelled {
				refused = fmt.Errorf("refused: %s is already %s; terminal items are never overwritten", key, it.State)
			}
		case err != nil:
			tw.Flush()
			return fmt.Errorf("cancel %s: %w", key, err)
		default:
			cancelled++
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, was, it.State)
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
	fmt.Fprintf(e.stdout, "%d cancelled, %d already terminal; run %s is %s", cancelled, kept, settled.ID, settled.State)
	switch settled.State {
	case ledger.RunFanningOut:
		fmt.Fprint(e.stdout, " (its fan-out goes on; the cancelled items' messages are acknowledged without running)")
	case ledger.RunFannedOut:
		fmt.Fprint(e.stdout, " (items in flight remain)")
	}
	fmt.Fprintln(e.stdout)
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
