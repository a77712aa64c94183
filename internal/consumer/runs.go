package consumer

import (
	"context"
	"iter"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// runReader is the baton.RunReader of the consumer's tasks: its own
// ledger and catalog, so a processor reads another run's results through
// the engine it runs on.
type runReader struct {
	ledger ledger.Store
	jobs   *baton.Catalog
}

func (r runReader) Results(ctx context.Context, run baton.RunID) iter.Seq2[baton.ItemResult, error] {
	return func(yield func(baton.ItemResult, error) bool) {
		j, err := r.jobs.Lookup(run.Job)
		if err != nil {
			yield(baton.ItemResult{}, err)
			return
		}
		for res, err := range ledger.Results(ctx, r.ledger, run, run.Submitted() || jobspec.RunTime(j)) {
			if !yield(res, err) || err != nil {
				return
			}
		}
	}
}
