package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ops"
	"github.com/batonhq/baton/internal/runstatus"
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
	id, j, err := parseRun(e.catalog, run)
	if err != nil {
		return err
	}
	if asset != "" && !id.Submitted() && !jobspec.RunTime(j) {
		if err := checkAsset(j, asset); err != nil {
			return err
		}
	}
	b, op, err := openOperator(ctx, &e.backend, e.catalog)
	if err != nil {
		return err
	}
	defer b.Close()
	res, err := op.Cancel(ctx, ops.CancelParams{Run: id, Item: asset, Reason: reason})
	var terminal *ops.ItemTerminalError
	switch {
	case errors.As(err, &terminal):
		err = fmt.Errorf("refused: %w", err)
	case errors.Is(err, ops.ErrUnknownRun) || errors.Is(err, ops.ErrSuperseded) || errors.Is(err, ops.ErrUnknownItem):
		return runRefusal(err, "cancel that run instead")
	case err != nil && len(res.Items) == 0:
		return err
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
	for _, c := range res.Items {
		if !c.Changed {
			fmt.Fprintf(tw, "%s\t%s\tunchanged (terminal)\n", c.Item, c.After.State)
			changes = append(changes, change{Item: c.Item, Was: string(c.After.State), Now: string(c.After.State)})
			continue
		}
		was := pending
		if c.Before.State != "" {
			was = describeItem(c.Before)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Item, was, c.After.State)
		changes = append(changes, change{Item: c.Item, Was: was, Now: string(c.After.State), Changed: true})
	}
	tw.Flush()
	if res.Run.ID.Job == "" { // stopped before settling
		return err
	}
	settled := res.Run
	line := fmt.Sprintf("%d cancelled, %d already terminal; run %s is %s", res.Cancelled, res.AlreadyTerminal, settled.ID, settled.State)
	switch settled.State {
	case ledger.RunFanningOut:
		line += " (its fan-out goes on; the cancelled items' messages are acknowledged without running)"
	case ledger.RunFannedOut:
		line += " (items in flight remain)"
	}
	e.sayf("%s\n", line)
	e.set("items", changes)
	e.set("cancelled", res.Cancelled)
	e.set("already_terminal", res.AlreadyTerminal)
	e.set("run", runstatus.NewRun(settled, nil, nil))
	return err
}

// runRefusal is the CLI's error for an operation refused because of the
// run or item it names (bad input, exit status 2); instead says what to
// do with a superseded run. Other errors are returned as they are.
func runRefusal(err error, instead string) error {
	var unknown *ops.UnknownRunError
	var sup *ops.SupersededError
	switch {
	case errors.As(err, &unknown) && unknown.Latest.Job == "":
		id := unknown.ID
		return usagef("unknown run %s: tick %s has no run ('baton status --job %s' lists the runs)", id, jobspec.TickKey(id), id.Job)
	case errors.As(err, &unknown):
		return usagef("%v", unknown)
	case errors.As(err, &sup):
		return usagef("run %s is superseded by %s: %s", sup.ID, sup.Current.ID, instead)
	case errors.Is(err, ops.ErrUnknownItem):
		return usagef("%v", err)
	}
	return err
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
