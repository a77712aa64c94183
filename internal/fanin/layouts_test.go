package fanin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// partitionedRanges reads the item ranges of run as a store that
// partitions it does (DynamoDB): ListItemRange reads the partition of its
// first name only, so a range that crosses partitions misses items. It
// counts such ranges. Other runs are kept in one place.
type partitionedRanges struct {
	*crashing
	run      ledger.RunID
	parts    int
	crossing int
	listed   int // the most items one read of run returned
}

func (p *partitionedRanges) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	items, err := p.crashing.ListItemRange(ctx, run, first, last)
	if err != nil || run != p.run {
		return items, err
	}
	part := ledger.ItemPartition(first, p.parts)
	if ledger.ItemPartition(last, p.parts) != part {
		p.crossing++
	}
	var out []ledger.Item
	for _, it := range items {
		if ledger.ItemPartition(it.Key.Asset, p.parts) == part {
			out = append(out, it)
		}
	}
	p.listed = max(p.listed, len(out))
	return out, nil
}

// A partitioned catalog run (shards cut within partitions, its layout
// cached) and a run-time list run (its stored pages as shards, no catalog)
// settled side by side in one process: each finishes at its own last
// item, and not before.
func TestPartitionedCatalogRunAndRunTimeListRunSettleAtTheirLastItem(t *testing.T) {
	t.Parallel()
	cat := setupBig(t, 300, nil)
	ps := &partitionedRanges{crashing: cat.l, run: cat.run.ID, parts: 3}
	cat.run.Partitions = ps.parts // as the store that opened it says

	// The run-time list: 150 items in 3 stored pages, on the same store.
	names := make([]string, 150)
	items := make([]baton.Item, len(names))
	for i := range names {
		names[i] = fmt.Sprintf("item-%04d", i)
		items[i] = baton.Item{Name: names[i]}
	}
	rt := baton.Job{Name: "listed", Schedule: "rate(1 minute)", Items: baton.ItemList(10, items...),
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	require.NoError(t, rt.Validate())
	require.True(t, jobspec.RunTime(rt))
	ctx := t.Context()
	rtRun, _, err := cat.l.OpenRun(ctx, ledger.OpenRunParams{Job: rt.Name, Nominal: cat.now, Fence: 1, Shards: 1, Now: cat.now})
	require.NoError(t, err)
	var pages []ledger.Page
	for i := 0; i*ledger.PageItems < len(names); i++ {
		var pi []ledger.PageItem
		for _, n := range names[i*ledger.PageItems : min((i+1)*ledger.PageItems, len(names))] {
			pi = append(pi, ledger.PageItem{Name: n})
		}
		pg, err := cat.l.PutPage(ctx, ledger.PutPageParams{Run: rtRun.ID, Index: i, Items: pi,
			Final: (i+1)*ledger.PageItems >= len(names), Now: cat.now})
		require.NoError(t, err)
		pages = append(pages, pg)
	}
	require.Len(t, pages, 3)
	rtRun, err = cat.l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: rtRun.ID, Fence: 1, Cursor: len(names), Done: true, Now: cat.now})
	require.NoError(t, err)

	endItem := func(run ledger.RunID, asset string) {
		t.Helper()
		key := ledger.ItemKey{Run: run, Asset: asset}
		_, err := cat.l.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w", LeaseUntil: cat.now.Add(time.Minute), Now: cat.now})
		require.NoError(t, err)
		_, err = cat.l.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "w", Attempt: 1, Now: cat.now})
		require.NoError(t, err)
	}
	catNames := jobspec.ItemNames(cat.job)
	for i := range max(len(catNames), len(names)) {
		if i < len(catNames) {
			endItem(cat.run.ID, catNames[i])
			run, err := fanin.SettleShard(ctx, fanin.ShardParams{Ledger: ps, Def: cat.job, Run: cat.run, Item: catNames[i], Now: cat.now})
			require.NoError(t, err)
			if i < len(catNames)-1 {
				require.Equal(t, ledger.RunFannedOut, run.State, "catalog run after %d of %d items", i+1, len(catNames))
			} else {
				require.Equal(t, ledger.RunComplete, run.State, "catalog run at its last item")
				require.Equal(t, len(catNames), run.Succeeded)
			}
		}
		if i < len(names) {
			endItem(rtRun.ID, names[i])
			pg := pages[i/ledger.PageItems]
			run, err := fanin.SettleShard(ctx, fanin.ShardParams{Ledger: ps, Def: rt, Run: rtRun, Item: names[i], Page: &pg, Now: cat.now})
			require.NoError(t, err)
			if i < len(names)-1 {
				require.Equal(t, ledger.RunFannedOut, run.State, "run-time list run after %d of %d items", i+1, len(names))
			} else {
				require.Equal(t, ledger.RunComplete, run.State, "run-time list run at its last item")
				require.Equal(t, len(names), run.Succeeded)
			}
		}
	}
	require.Zero(t, ps.crossing, "a shard of the partitioned run is read across partitions")
	require.LessOrEqual(t, ps.listed, fanin.ShardItems, "a settle of the partitioned run reads one shard")
	require.Zero(t, cat.l.wholeRuns, "no settle reads a whole run")
}
