package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
)

// Settle finishes the tick's run when it can. A run fanned out whose
// catalog assets (the first Total of the catalog) and derived items are
// all terminal becomes complete (all SUCCEEDED) or partial, with its
// counts. Before that check, derived items whose inputs ended DEAD or
// CANCELLED are cancelled ("input X is DEAD"), so that a run always
// settles. Settle returns the run as it is after the call: unchanged when
// it is still fanning out, has items in flight, or was already finished.
// It returns the ledger's errors (ErrNotFound when the tick has no run)
// and an error matching job.ErrUnknownJob for an unknown job.
func (c *Coordinator) Settle(ctx context.Context, jobName string, nominal time.Time) (ledger.Run, error) {
	j, err := c.Jobs.Lookup(jobName)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("settle: %w", err)
	}
	run, err := c.Ledger.GetRun(ctx, jobName, nominal)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("settle %s@%s: %w", jobName, nominal.UTC().Format(time.RFC3339), err)
	}
	if run.State != ledger.RunFannedOut {
		return run, nil
	}
	items, err := c.Ledger.ListItems(ctx, run.ID)
	if err != nil {
		return run, fmt.Errorf("settle %s: %w", run.ID, err)
	}
	now := c.now()
	if items == nil {
		items = []ledger.Item{}
	}
	res, err := fanin.Check(ctx, fanin.Params{Ledger: c.Ledger, Def: j.Definition, Run: run.ID, Items: items, Now: now})
	if err != nil {
		return run, fmt.Errorf("settle %s: %w", run.ID, err)
	}
	if len(res.Cancelled) > 0 {
		if items, err = c.Ledger.ListItems(ctx, run.ID); err != nil {
			return run, fmt.Errorf("settle %s: %w", run.ID, err)
		}
	}

	states := make(map[string]ledger.ItemState, len(items))
	for _, it := range items {
		states[it.Key.Asset] = it.State
	}
	names := append([]string(nil), j.Assets[:min(run.Total, len(j.Assets))]...)
	for _, d := range j.Derived {
		names = append(names, d.Name)
	}
	p := ledger.FinishRunParams{ID: run.ID, Now: now}
	for _, n := range names {
		switch states[n] {
		case ledger.ItemSucceeded:
			p.Succeeded++
		case ledger.ItemDead:
			p.Dead++
		case ledger.ItemCancelled:
			p.Cancelled++
		default:
			return run, nil // in flight
		}
	}
	fin, err := c.Ledger.FinishRun(ctx, p)
	if errors.Is(err, ledger.ErrTerminal) {
		return fin, nil // settled by someone else meanwhile
	}
	if err != nil {
		return run, fmt.Errorf("settle %s: finish: %w", run.ID, err)
	}
	return fin, nil
}

// settleQuietly settles a tick in passing; failures are logged only.
func (c *Coordinator) settleQuietly(ctx context.Context, log *slog.Logger, job string, nominal time.Time) {
	run, err := c.Settle(ctx, job, nominal)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
	case err != nil:
		log.WarnContext(ctx, "settle failed", slog.String("phase", "settle"), slog.Time("tick", nominal), slog.Any("error", err))
	default:
		log.DebugContext(ctx, "settle", slog.String("phase", "settle"), slog.String("settled_run", run.ID.String()),
			slog.String("state", string(run.State)), slog.Int("succeeded", run.Succeeded),
			slog.Int("dead", run.Dead), slog.Int("cancelled", run.Cancelled))
	}
}
