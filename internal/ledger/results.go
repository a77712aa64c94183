package ledger

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/batonhq/baton"
)

// Results yields run's items in name order, a page at a time (memory flat
// in the run's size). stored says whether the run's items are a stored
// list (a submission, a job with baton.Job.Items): then every item of the
// list, started or not; else the items that started. A run that does not
// exist (no record, or a generation not opened yet) yields an error
// matching baton.ErrNoRun; an earlier generation's items stay readable. It stops at the first error, which it yields.
func Results(ctx context.Context, s Store, run RunID, stored bool) iter.Seq2[baton.ItemResult, error] {
	return func(yield func(baton.ItemResult, error) bool) {
		rec, err := GetRunOf(ctx, s, run)
		switch {
		case errors.Is(err, ErrNotFound):
			yield(baton.ItemResult{}, fmt.Errorf("results of %s: %w", run, baton.ErrNoRun))
			return
		case err != nil:
			yield(baton.ItemResult{}, fmt.Errorf("results of %s: %w", run, err))
			return
		case rec.ID.Generation < run.Generation:
			yield(baton.ItemResult{}, fmt.Errorf("results of %s: %w (its newest generation is %s)", run, baton.ErrNoRun, rec.ID))
			return
		}
		if !stored {
			items, err := s.ListItems(ctx, run)
			if err != nil {
				yield(baton.ItemResult{}, fmt.Errorf("results of %s: %w", run, err))
				return
			}
			for _, it := range items {
				if !yield(itemResult(it.Key.Asset, it), nil) {
					return
				}
			}
			return
		}
		for p := 0; ; p++ {
			pg, err := s.GetPage(ctx, run, p)
			if errors.Is(err, ErrNotFound) {
				return // the list is not stored whole yet
			}
			if err != nil {
				yield(baton.ItemResult{}, fmt.Errorf("results of %s: page %d: %w", run, p, err))
				return
			}
			if len(pg.Items) > 0 {
				recs, err := s.ListItemRange(ctx, run, pg.Items[0].Name, pg.Items[len(pg.Items)-1].Name)
				if err != nil {
					yield(baton.ItemResult{}, fmt.Errorf("results of %s: page %d: %w", run, p, err))
					return
				}
				byName := make(map[string]Item, len(recs))
				for _, r := range recs {
					byName[r.Key.Asset] = r
				}
				for _, it := range pg.Items {
					if !yield(itemResult(it.Name, byName[it.Name]), nil) {
						return
					}
				}
			}
			if pg.Final {
				return
			}
		}
	}
}

func itemResult(name string, it Item) baton.ItemResult {
	r := baton.ItemResult{Item: name, State: string(it.State), Attempts: it.Attempt, Result: it.Result, Error: it.Error, FinishedAt: it.FinishedAt}
	if w, ok := it.NextAttempt(); ok {
		r.NextAttempt, r.WaitLimit, r.WaitKey = w.At, w.Limit, w.Key
	}
	return r
}
