package coordinator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
)

// itemsEndFirst is a ledger whose consumers win the race with the
// coordinator: before the fan-out's last checkpoint (the one that marks
// the run fanned out) lands, every item of the run has ended. Their
// consumers each read the run still fanning out, so none of them could
// settle it.
type itemsEndFirst struct {
	ledger.Store
	t *testing.T
	b *bundle
}

func (l itemsEndFirst) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	if p.Done {
		for _, a := range append(append([]string(nil), fx.Assets...), fx.DXY) {
			finishItem(l.t, l.b, p.ID, a, ledger.ItemSucceeded)
		}
	}
	return l.Store.AdvanceRun(ctx, p)
}

// A run whose items all ended while its fan-out was still being
// recorded is settled by the coordinator that fanned it out, in the same
// invocation: nobody else would until the job's next trigger.
func TestRunSettlesItsRunWhenItemsEndedDuringFanOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := b.coordinator("c1")
	c.Ledger = itemsEndFirst{Store: b.ledger, t: t, b: b}
	sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	run, err := b.ledger.GetRun(ctx, "fx", sum.Nominal)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State, "settled by the coordinator that fanned it out")
	require.Equal(t, len(fx.Assets)+1, run.Succeeded)
}
