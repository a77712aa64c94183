package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
)

// StartChains starts the runs the chains of run's job call for (see
// baton.Chain), now that run is finished: for each chain whose condition
// holds (complete, or partial with OnPartial), the chained job's run is
// the submission baton.ChainKey(run.ID), opened at most once whatever the
// retention, with the chained job's items (its Assets, or its Items
// function asked with the parent) and run.ID as their Task.Parent. A
// chained run found opened already is left as it is (resumed when it is
// still fanning out), so any number of calls start each chained run once.
// It returns the first error, after trying every chain.
func (c *Coordinator) StartChains(ctx context.Context, run ledger.Run) error {
	if !run.State.Finished() {
		return nil
	}
	j, err := c.Jobs.Lookup(run.ID.Job)
	if err != nil {
		return fmt.Errorf("start chains of %s: %w", run.ID, err)
	}
	var first error
	for _, ch := range j.Chains {
		if run.State == ledger.RunPartial && !ch.OnPartial {
			continue
		}
		if _, err := c.startChain(ctx, run.ID, ch); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// startChain starts ch's run for the finished run parent.
func (c *Coordinator) startChain(ctx context.Context, parent ledger.RunID, ch baton.Chain) (Summary, error) {
	child, err := c.Jobs.Lookup(ch.Job)
	if err != nil {
		return Summary{}, fmt.Errorf("chain %s → %s: %w", parent, ch.Job, err)
	}
	items := child.Items
	if items == nil {
		assets := slices.Clone(child.Assets)
		slices.Sort(assets)
		list := make([]baton.Item, len(assets))
		for i, a := range assets {
			list[i] = baton.Item{Name: a}
		}
		items = baton.ItemList(ledger.PageItems*16, list...)
	}
	sum, err := c.submitRun(ctx, submitParams{job: child, key: baton.ChainKey(parent), items: items, parent: parent, once: true})
	if err != nil {
		return sum, fmt.Errorf("chain %s → %s: %w", parent, ch.Job, err)
	}
	if !sum.Deduped && sum.Outcome != OutcomeSkipped {
		c.logger().InfoContext(ctx, "chained run started", slog.String("phase", "chain"), slog.String("parent", parent.String()),
			slog.String("run", sum.Run.String()), slog.Int("enqueued", sum.Enqueued))
	}
	return sum, nil
}

// chainsQuietly starts run's chains in passing; failures are logged only
// (the job's next trigger tries again).
func (c *Coordinator) chainsQuietly(ctx context.Context, log *slog.Logger, run ledger.Run) {
	if err := c.StartChains(ctx, run); err != nil && !errors.Is(err, context.Canceled) {
		log.WarnContext(ctx, "starting chained runs failed; the job's next trigger tries again", slog.String("phase", "chain"),
			slog.String("parent", run.ID.String()), slog.Any("error", err))
	}
}
