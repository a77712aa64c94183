package ops

import (
	"context"

	"github.com/batonhq/baton/internal/engine"
	"github.com/batonhq/baton/internal/ledger"
)

// ItemReplay says what ReplayItem did (see engine.ItemReplay and its
// outcomes engine.ItemEnqueued, engine.ItemAlreadyTerminal and
// engine.ItemNewGeneration).
type ItemReplay = engine.ItemReplay

// Refusals of ReplayItem, besides *UnknownRunError and *SupersededError.
var (
	// ErrItemHeld: the item is RUNNING under a live claim and force was
	// not set (an *engine.ItemHeldError, with the claim).
	ErrItemHeld = engine.ErrItemHeld
	// ErrRunInFlight: force on a terminal item of a run that has not
	// settled.
	ErrRunInFlight = engine.ErrRunInFlight
	// ErrInputsPending: a derived item some of whose inputs have not
	// ended (and none ended without success).
	ErrInputsPending = engine.ErrInputsPending
)

// ReplayItem sends item asset of run id (its tick's current generation)
// again, as the coordinator's fan-out would; with force, a held item is
// enqueued anyway and a terminal one re-runs in the tick's next
// generation (engine.Engine.ReplayItem says how). It returns once the
// message is sent: the consumers run it.
func (o *Operator) ReplayItem(ctx context.Context, id ledger.RunID, asset string, force bool) (ItemReplay, error) {
	if _, err := o.currentRun(ctx, id); err != nil {
		return ItemReplay{}, err
	}
	eng, err := o.engine()
	if err != nil {
		return ItemReplay{}, err
	}
	return eng.ReplayItem(ctx, id, asset, force)
}
