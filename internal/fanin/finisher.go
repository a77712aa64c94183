package fanin

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/ledger"
)

// ChainGrace is how long after a run's finish a settler that did not
// finish it may start its chained runs (baton.Chain): the settler whose
// FinishRun wrote the finish starts them at once (Finisher), and any
// other one that finds the run finished within ChainGrace leaves them to
// it, so that concurrent settlers do not both send the chained run's
// messages. Past ChainGrace the finisher may have stopped between its
// finish and its send: a message redelivered after its visibility timeout
// (well above ChainGrace: 180 s on the template), or the job's next
// trigger, starts them (idempotently: a chained run opens once).
const ChainGrace = 30 * time.Second

// Finisher wraps store, noting whether a FinishRun through it finished a
// run (rather than finding it finished by someone else).
type Finisher struct {
	ledger.Store
	won atomic.Bool
}

// FinishRun implements ledger.Store.
func (f *Finisher) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	r, err := f.Store.FinishRun(ctx, p)
	if err == nil {
		f.won.Store(true)
	}
	return r, err
}

// Won reports whether a FinishRun through f finished a run.
func (f *Finisher) Won() bool { return f.won.Load() }

// StartsChains reports whether a settler that saw run finished starts its
// chains: when it finished it itself (won), or when ChainGrace has passed
// since the finish (the finisher may have stopped before starting them).
func StartsChains(run ledger.Run, won bool, now time.Time) bool {
	return run.State.Finished() && (won || !now.Before(run.FinishedAt.Add(ChainGrace)))
}
