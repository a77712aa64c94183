package ddbthrottle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/lab/ddbthrottle"
)

// A run's item writes at a steady rate, behind limits scaled down to 50
// write units per second per partition key: with every item in one
// partition key the run is throttled within its first seconds; spread
// over partitions (ledger.Run.Partitions) it finishes with no throttle,
// its hottest partition under the limit, and settles.
func TestRunItemsSpreadOverPartitionsAreNotThrottled(t *testing.T) {
	t.Parallel()
	const (
		limit       = 50  // write units per second per partition key
		items       = 512 // 8 shards of 64
		itemsPerSec = 40  // 80 item writes a second, over the limit for one partition key
	)
	assets := make([]string, items)
	for i := range assets {
		assets[i] = fmt.Sprintf("A%04d", i)
	}
	j := baton.Job{Name: "spread", Schedule: "rate(1 minute)", Assets: assets,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}

	for _, tc := range []struct {
		name               string
		shardsPerPartition int
		wantParts          int
	}{
		{"one partition key", 1000, 0},
		{"a partition key per shard", 1, fanin.Shards(items)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, ddbthrottle.Options{WriteUnits: limit, ReadUnits: 3 * limit})
			store := awsdynamodb.NewLedgerStore(b.client, b.table, &awsdynamodb.Options{ShardsPerPartition: tc.shardsPerPartition})
			now := b.clock.Now
			run, _, err := store.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Nominal: now().Truncate(time.Minute), Fence: 1, Shards: fanin.Shards(items), Now: now()})
			require.NoError(t, err)
			require.Equal(t, tc.wantParts, run.Partitions)
			run, err = store.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: items, Done: true, Now: now()})
			require.NoError(t, err)

			var throttled error
			for i, a := range assets {
				if i > 0 && i%itemsPerSec == 0 {
					b.clock.Add(time.Second)
				}
				key := ledger.ItemKey{Run: run.ID, Asset: a}
				it, err := store.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "c", LeaseUntil: now().Add(time.Minute), Fence: 1, Now: now()})
				if err == nil {
					_, err = store.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "c", Attempt: it.Attempt, Now: now()})
				}
				if err == nil {
					run, err = fanin.SettleShard(ctx, fanin.ShardParams{Ledger: store, Def: j, Run: run, Item: a, Now: now()})
				}
				if err != nil {
					throttled = err
					break
				}
			}
			st := b.proxy.Stats()
			hot := st.Hottest()
			t.Logf("hottest partition %s: peak %.0f write units/s, %d throttles", hot.Key, hot.PeakWriteUnits, st.Throttles)
			if tc.wantParts == 0 {
				require.True(t, isThrottle(throttled), "one partition key at %d item writes a second: %v", 2*itemsPerSec, throttled)
				require.Positive(t, st.Throttles)
				return
			}
			require.NoError(t, throttled)
			require.Zero(t, st.Throttles)
			require.LessOrEqual(t, hot.PeakWriteUnits, float64(limit))
			require.Equal(t, ledger.RunComplete, run.State, "the run settles by its items' shards")
			require.Equal(t, items, run.Succeeded)

			// Every item is found from its key alone by a store that has
			// not read the run, and listed whole.
			fresh := awsdynamodb.NewLedgerStore(b.client, b.table, nil)
			got, err := fresh.GetItem(ctx, ledger.ItemKey{Run: run.ID, Asset: assets[items-1]})
			require.NoError(t, err)
			require.Equal(t, ledger.ItemSucceeded, got.State)
			all, err := fresh.ListItems(ctx, run.ID)
			require.NoError(t, err)
			require.Len(t, all, items)
			for i, it := range all {
				require.Equal(t, assets[i], it.Key.Asset, "in asset order")
			}
		})
	}
}
