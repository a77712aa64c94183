package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
)

// Past the job's RunBudget (counted from the run's opening) an item does
// not start: it is CANCELLED with the reason, and so is the derived item
// that takes it as input; its message is acknowledged as over_budget. An
// item started in time runs on: a live claim is left alone.
func TestRunBudgetCancelsItemsNotStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.def.RunBudget = 85 * time.Second
	b.consumer.Jobs = baton.MustCatalog(b.job())
	ctx := context.Background()

	// In time: processed.
	res := b.consumer.Handle(ctx, time.Time{}, b.deliveries(b.message("GBPUSD")))
	require.Equal(t, consumer.StatusSucceeded, res.Items[0].Status)
	// Claimed in time, still held when the budget passes.
	_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: b.key("USDJPY"), Owner: "other", LeaseUntil: tick.Add(2 * time.Minute), Now: b.clock.Now()})
	require.NoError(t, err)

	b.clock.Set(tick.Add(85 * time.Second)) // the run opened at tick
	res = b.consumer.Handle(ctx, time.Time{}, b.deliveries(b.message("EURUSD"), b.message("USDJPY")))
	require.Equal(t, []string{consumer.StatusOverBudget, consumer.StatusHeld}, []string{res.Items[0].Status, res.Items[1].Status})
	require.Len(t, res.Failed, 1, "only the held one comes back")
	eur := b.item(t, "EURUSD")
	require.Equal(t, ledger.ItemCancelled, eur.State)
	require.Equal(t, "run budget 1m25s exceeded: not started by 2026-11-21T12:02:25Z (run opened 2026-11-21T12:01:00Z)", eur.Error)
	require.Zero(t, b.proc.count(b.key("EURUSD")), "never processed")
	dxy := b.item(t, "DXY")
	require.Equal(t, ledger.ItemCancelled, dxy.State, "downstream of a cancelled input")
	require.Equal(t, "input EURUSD is CANCELLED", dxy.Error)
	require.Equal(t, ledger.ItemRunning, b.item(t, "USDJPY").State)
}
