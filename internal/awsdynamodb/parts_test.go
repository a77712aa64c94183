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
