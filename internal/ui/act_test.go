package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ui"
)

// The dashboard's actions are the operator's calls, with their guards,
// reported in the dashboard's words: no CLI command runs (its table and
// its wording are not there).
func TestActorPerformsTheOperations(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	x := &ui.Actor{
		Catalog: s.catalog, Owner: "tester", Timeout: 20 * time.Second, Consumers: 2,
		OpenFunc: func(ctx context.Context) (backend.Backend, error) { return sqlitebackend.Open(ctx, s.path) },
	}

	// A live lease is never released from the dashboard.
	cur, err := s.b.Leases.Inspect(ctx, fx.Name)
	require.NoError(t, err)
	live, err := s.b.Leases.Acquire(ctx, lease.AcquireParams{Job: fx.Name, Owner: "coordinator-live", TTL: time.Hour, Now: time.Now(), Skew: time.Second})
	require.NoError(t, err)
	require.Equal(t, cur.Fence+1, live.Fence)
	out := x.Do(ctx, ui.Action{Kind: ui.ReleaseLease, Job: fx.Name, Owner: "coordinator-live", Fence: live.Fence})
	require.Equal(t, 1, out.ExitStatus, out.Output)
	require.Contains(t, out.Output, `refused: "coordinator-live" holds the lease of fx`)
	require.Contains(t, out.Output, "the dashboard never releases a live lease")
	cur, err = s.b.Leases.Inspect(ctx, fx.Name)
	require.NoError(t, err)
	require.Equal(t, "coordinator-live", cur.Owner, "the live lease is kept")
	out = x.Do(ctx, ui.Action{Kind: ui.ReleaseLease, Job: fx.Name, Owner: "coordinator-7f3a", Fence: live.Fence - 1})
	require.Equal(t, 1, out.ExitStatus, out.Output)
	require.Contains(t, out.Output, "it changed hands since you looked")

	// Cancel: one line per item, in the dashboard's words.
	out = x.Do(ctx, ui.Action{Kind: ui.Cancel, Run: s.inFlight})
	require.Equal(t, 0, out.ExitStatus, out.Output)
	require.Contains(t, out.Output, "EURUSD: RUNNING (worker-a, attempt 1) → CANCELLED\n")
	require.Contains(t, out.Output, "GBPUSD: SUCCEEDED, unchanged (terminal)\n")
	require.NotContains(t, out.Output, "ITEM", "not the CLI's table")
	require.Contains(t, out.Output, "7 cancelled, 1 already terminal; run "+s.inFlight.String()+" is partial")
	it, err := s.b.Ledger.GetItem(ctx, ledger.ItemKey{Run: s.inFlight, Asset: "EURUSD"})
	require.NoError(t, err)
	require.Equal(t, "cancelled from baton ui by tester", it.Error)

	// A SUCCEEDED item named: refused, unchanged.
	out = x.Do(ctx, ui.Action{Kind: ui.Cancel, Run: s.complete, Asset: "EURUSD"})
	require.Equal(t, 1, out.ExitStatus, out.Output)
	require.Contains(t, out.Output, "refused: "+s.complete.String()+"/EURUSD is already SUCCEEDED")

	// Redrive: both dead letters go back to the work queue.
	out = x.Do(ctx, ui.Action{Kind: ui.Redrive})
	require.Equal(t, 0, out.ExitStatus, out.Output)
	require.Contains(t, out.Output, "moved 2 message(s) from the dead-letter queue to the work queue")
}
