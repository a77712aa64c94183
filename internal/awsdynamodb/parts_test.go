package awsdynamodb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/ledger"
)

// A generation opened with more shards than ShardsPerPartition keeps its
// items under ITEMS#<run id>#P<p>; any store finds them from their keys,
// a shard's range reads one partition, and a superseded generation's
// items stay where they were after a forced replay opens a smaller one.
func TestItemPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &awsdynamodb.Options{ShardsPerPartition: 2})
	job := uniqueName(t)
	run, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Shards: 7, Now: t0})
	require.NoError(t, err)
	require.Equal(t, 4, run.Partitions, "ceil(7 shards / 2)")

	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("N%02d", i)
		_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: names[i]}, Owner: "o", LeaseUntil: t0.Add(time.Minute), Now: t0})
		require.NoError(t, err)
	}
	p := ledger.ItemPartition("N07", 4)
	rec := b.raw(t, fmt.Sprintf("ITEMS#%s#P%d", run.ID, p), "N07")
	require.Equal(t, "RUNNING", attrS(rec, "state"), "the record is in its partition")

	// A range reads first's partition only.
	got, err := b.ledger.ListItemRange(ctx, run.ID, "N00", "N39")
	require.NoError(t, err)
	var want []string
	for _, n := range names {
		if ledger.ItemPartition(n, 4) == ledger.ItemPartition("N00", 4) {
			want = append(want, n)
		}
	}
	require.Equal(t, want, assets(got))

	// A forced replay opens a generation of one partition; a store that
	// never saw generation 1 still finds its items.
	run2, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 2, Force: true, Shards: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, 2, run2.ID.Generation)
	require.Zero(t, run2.Partitions)
	fresh := awsdynamodb.NewLedgerStore(b.client, b.table, nil)
	it, err := fresh.Cancel(ctx, ledger.CancelParams{Key: ledger.ItemKey{Run: run.ID, Asset: "N07"}, Reason: "superseded", Now: t0})
	require.NoError(t, err)
	require.Equal(t, 1, it.Attempt, "the claimed record, not a new one")
	all, err := fresh.ListItems(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, names, assets(all), "every partition, in asset order")

	_, err = fresh.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run2.ID, Asset: "N07"}, Owner: "o", LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err)
	require.Equal(t, "RUNNING", attrS(b.raw(t, "ITEMS#"+run2.ID.String(), "N07"), "state"), "one partition: ITEMS#<run id>")
}

func assets(items []ledger.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key.Asset
	}
	return out
}

// A generation opened with Pages is partitioned by page: page i's items
// live under ITEMS#<run id>#P<i mod partitions>, and a store that never
// read the pages finds an item's page by searching them (ranges, claims,
// cancels by key); a name on no page is not found, and nothing is written
// for it.
func TestPagePartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &awsdynamodb.Options{ShardsPerPartition: 2})
	job := uniqueName(t)
	run, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Shards: 7, Pages: true, Now: t0})
	require.NoError(t, err)
	require.Equal(t, 4, run.Partitions, "ceil(7 expected pages / 2)")
	require.True(t, run.Pages)

	const pages = 11 // more than expected: pages 4… wrap around the partitions
	for p := range pages {
		var items []ledger.PageItem
		for i := range 5 {
			items = append(items, ledger.PageItem{Name: fmt.Sprintf("N%02d-%d", p, i)})
		}
		_, err := b.ledger.PutPage(ctx, ledger.PutPageParams{Run: run.ID, Index: p, Items: items, Final: p == pages-1, Now: t0})
		require.NoError(t, err)
	}
	for p := range pages {
		fresh := awsdynamodb.NewLedgerStore(b.client, b.table, nil) // knows no page
		name := fmt.Sprintf("N%02d-3", p)
		_, err := fresh.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: name}, Owner: "o", LeaseUntil: t0.Add(time.Minute), Now: t0})
		require.NoError(t, err, name)
		rec := b.raw(t, fmt.Sprintf("ITEMS#%s#P%d", run.ID, p%4), name)
		require.Equal(t, "RUNNING", attrS(rec, "state"), "%s is in its page's partition", name)
	}
	fresh := awsdynamodb.NewLedgerStore(b.client, b.table, nil)
	got, err := fresh.ListItemRange(ctx, run.ID, "N05-0", "N05-4")
	require.NoError(t, err)
	require.Equal(t, []string{"N05-3"}, assets(got), "one page, one range")
	got, err = fresh.ListItemRange(ctx, run.ID, "N01-0", "N99")
	require.NoError(t, err)
	require.Equal(t, []string{"N01-3", "N05-3", "N09-3"}, assets(got), "page 1's partition holds pages 1, 5 and 9")
	for _, name := range []string{"N05-9", "A", "N99"} { // between pages, before the first, after the last
		_, err = awsdynamodb.NewLedgerStore(b.client, b.table, nil).GetItem(ctx, ledger.ItemKey{Run: run.ID, Asset: name})
		require.ErrorIs(t, err, ledger.ErrNotFound, name)
		_, err = fresh.Cancel(ctx, ledger.CancelParams{Key: ledger.ItemKey{Run: run.ID, Asset: name}, Reason: "x", Now: t0})
		require.Error(t, err, name)
	}
	all, err := fresh.ListItems(ctx, run.ID)
	require.NoError(t, err)
	require.Len(t, all, pages)
	// A name within a page's range is that page's (an absent item is
	// cancelled there, as anywhere).
	_, err = fresh.Cancel(ctx, ledger.CancelParams{Key: ledger.ItemKey{Run: run.ID, Asset: "N03-35"}, Reason: "x", Now: t0})
	require.NoError(t, err)
	require.Equal(t, "CANCELLED", attrS(b.raw(t, fmt.Sprintf("ITEMS#%s#P3", run.ID), "N03-35"), "state"))

	// Superseded by a generation of one place, generation 1's items are
	// still found in their pages' partitions by a store that never saw it.
	_, _, err = b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 2, Force: true, Shards: 1, Now: t0})
	require.NoError(t, err)
	it, err := awsdynamodb.NewLedgerStore(b.client, b.table, nil).GetItem(ctx, ledger.ItemKey{Run: run.ID, Asset: "N06-3"})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemRunning, it.State)
}
