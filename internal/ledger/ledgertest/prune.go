package ledgertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// PrunerStore is a ledger store with the pruning capability.
type PrunerStore interface {
	ledger.Store
	ledger.Pruner
}

// RunPrune checks ledger.Pruner on the stores newStore makes (stores
// that prune by themselves, as DynamoDB's TTL does, have no such case):
// Prune removes the job's runs finished before the cut-off (ticks and
// submissions, every generation's items, marks and pages), at most
// MaxRecords records per call, and nothing else: not a run finished
// later, not an unfinished run, not another job's.
func RunPrune(t *testing.T, newStore func(t *testing.T) PrunerStore) {
	t.Helper()
	pj, pjx := uniqueJob(), uniqueJob()+"x"
	ctx := context.Background()
	l := newStore(t)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

	// open opens a run, gives it n items (and a page, a mark), and
	// finishes it at finished unless zero; with force it first finishes
	// generation 1 and opens generation 2.
	open := func(job, sub string, nominal time.Time, n int, finished time.Time, force bool) ledger.RunID {
		t.Helper()
		r, _, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: job, Submission: sub, Nominal: nominal, Fence: 1, Now: t0})
		require.NoError(t, err)
		fill := func(id ledger.RunID) {
			var page []ledger.PageItem
			for i := range n {
				key := ledger.ItemKey{Run: id, Asset: fmt.Sprintf("i%03d", i)}
				_, err := l.Cancel(ctx, ledger.CancelParams{Key: key, Reason: "x", Now: t0})
				require.NoError(t, err)
				if i < ledger.PageItems {
					page = append(page, ledger.PageItem{Name: key.Asset})
				}
			}
			_, err := l.PutPage(ctx, ledger.PutPageParams{Run: id, Index: 0, Items: page, Final: true, Now: t0})
			require.NoError(t, err)
			_, err = l.MarkDone(ctx, ledger.MarkParams{Run: id, Level: 0, Index: 0, Now: t0})
			require.NoError(t, err)
			_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: id, Fence: 1, Cursor: n, Done: true, Now: t0})
			require.NoError(t, err)
		}
		fill(r.ID)
		if force {
			_, err := l.FinishRun(ctx, ledger.FinishRunParams{ID: r.ID, Cancelled: n, Now: t0})
			require.NoError(t, err)
			r, _, err = l.OpenRun(ctx, ledger.OpenRunParams{Job: job, Submission: sub, Nominal: nominal, Fence: 1, Force: true, Now: t0})
			require.NoError(t, err)
			fill(r.ID)
		}
		if !finished.IsZero() {
			_, err := l.FinishRun(ctx, ledger.FinishRunParams{ID: r.ID, Cancelled: n, Now: finished})
			require.NoError(t, err)
		}
		return r.ID
	}
	old := open(pj, "", t0, 150, t0.Add(time.Hour), true) // two generations of 150 items
	sub := open(pj, "req-1", time.Time{}, 10, t0.Add(2*time.Hour), false)
	recent := open(pj, "", t0.Add(time.Minute), 5, t0.Add(48*time.Hour), false)
	unfinished := open(pj, "", t0.Add(2*time.Minute), 5, time.Time{}, false)
	other := open(pjx, "", t0, 5, t0.Add(time.Hour), false)

	cut := t0.Add(24 * time.Hour)
	var passes, runs int
	for {
		res, err := l.Prune(ctx, ledger.PruneParams{Job: pj, Before: cut, MaxRecords: 100})
		require.NoError(t, err)
		require.LessOrEqual(t, res.Records, 100, "a pass deletes at most MaxRecords")
		passes++
		runs += res.Runs
		if !res.More {
			break
		}
		require.Less(t, passes, 20)
	}
	require.Equal(t, 2, runs)
	require.GreaterOrEqual(t, passes, 3, "150+150 items, marks and pages take several passes of 100")

	for _, id := range []ledger.RunID{old, {Job: pj, Nominal: t0, Generation: 1}, sub} {
		items, err := l.ListItems(ctx, id)
		require.NoError(t, err)
		require.Empty(t, items, "items of %s pruned", id)
		_, err = l.GetPage(ctx, id, 0)
		require.ErrorIs(t, err, ledger.ErrNotFound, "page of %s pruned", id)
		marks, err := l.ListMarks(ctx, id, 0, 0)
		require.NoError(t, err)
		require.Empty(t, marks)
		_, err = ledger.GetRunOf(ctx, l, id)
		require.ErrorIs(t, err, ledger.ErrNotFound, "run of %s pruned", id)
	}
	for _, id := range []ledger.RunID{recent, unfinished, other} {
		_, err := ledger.GetRunOf(ctx, l, id)
		require.NoError(t, err, "%s kept", id)
		items, err := l.ListItems(ctx, id)
		require.NoError(t, err)
		require.Len(t, items, 5, "items of %s kept", id)
	}
}
