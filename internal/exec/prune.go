package exec

import (
	"context"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ratelimit"
)

// DefaultPruneEvery is how often Prune runs a pass when asked for 0.
const DefaultPruneEvery = 5 * time.Minute

// PrunePass prunes, for each job of the catalog, its runs finished more
// than its retention (baton.Job.Retention) ago, at most maxRecords
// records per job (0: the store's default), and the rate limits' idle
// counters and slots (ratelimit.Pruner; a keyed limit's keys without
// number): one bounded pass. A backend without a pruner (DynamoDB keeps
// by TTL) prunes nothing.
func (e *Runtime) PrunePass(ctx context.Context, maxRecords int) (ledger.PruneResult, error) {
	var all ledger.PruneResult
	p := e.backend.Pruner
	if p == nil {
		return all, nil
	}
	now := e.now()
	if lp, ok := e.backend.RateLimits.(ratelimit.Pruner); ok {
		n, err := lp.PruneLimits(ctx, now)
		all.Records += n
		if err != nil {
			return all, err
		}
	}
	for _, name := range e.opts.Catalog.Names() {
		j, err := e.opts.Catalog.Lookup(name)
		if err != nil {
			return all, err
		}
		res, err := p.Prune(ctx, ledger.PruneParams{Job: name, Before: now.Add(-jobspec.Retention(j)), MaxRecords: maxRecords})
		all.Runs += res.Runs
		all.Records += res.Records
		all.More = all.More || res.More
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// Prune runs a pruning pass every interval (0: DefaultPruneEvery) until
// ctx ends; a pass that stopped at its bound goes on at the next tick.
// Failures are logged.
func (e *Runtime) Prune(ctx context.Context, every time.Duration) {
	if e.backend.Pruner == nil {
		return
	}
	if every <= 0 {
		every = DefaultPruneEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := e.PrunePass(ctx, 0)
		if err != nil && ctx.Err() == nil {
			e.opts.Logger.WarnContext(ctx, "prune pass failed", slog.String("phase", "prune"), slog.Any("error", err))
			continue
		}
		if res.Records > 0 {
			e.opts.Logger.InfoContext(ctx, "pruned", slog.String("phase", "prune"), slog.Int("runs", res.Runs),
				slog.Int("records", res.Records), slog.Bool("more", res.More))
		}
	}
}
