package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// A catalog of ExpandFrom assets or more goes out as shard messages: the
// coordinator sends one message per ExpandItems assets, and a deadline
// mid fan-out leaves a cursor on a shard boundary that the next
// invocation resumes from, every asset covered by exactly one shard
// message.
func TestHierarchicalFanOut(t *testing.T) {
	t.Parallel()
	const n = 2_450
	b := setup(t, bigJob("big", n))
	ctx := context.Background()
	b.queue.BeforeFunc = func([]queue.Message) error { b.clock.Advance(time.Second); return nil }
	c := b.coordinator("c1")
	c.ExpandFrom, c.ExpandItems = 1000, 100
	c.Checkpoint = 10 // shard messages per checkpoint: one batch, 1,000 assets

	sum, err := c.Run(ctx, coordinator.Trigger{Job: "big", At: t0, Deadline: t0.Add(3 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, coordinator.StoppedDeadline, sum.Stopped)
	require.Equal(t, 10, sum.ShardMessages, "one batch of ten shard messages before the deadline")
	require.Equal(t, 1000, sum.Enqueued)
	require.Equal(t, 1000, sum.Cursor)

	sum2, err := b.coordinator("c2").Run(ctx, coordinator.Trigger{Job: "big", At: t0.Add(20 * time.Second), Deadline: b.clock.Now().Add(10 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum2.Outcome)
	require.Equal(t, 15, sum2.ShardMessages, "14 of 100 and the last of 50")
	require.Equal(t, n-1000, sum2.Enqueued)

	covered := make([]int, n)
	for _, m := range b.queue.msgs {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		require.True(t, msg.IsShard())
		k, err := msg.ItemKey()
		require.NoError(t, err)
		require.Equal(t, b.jobs.Jobs()[0].Assets[msg.Expand.From], k.Asset, "the key names the range's first asset")
		require.LessOrEqual(t, msg.Expand.To-msg.Expand.From, 100)
		for i := msg.Expand.From; i < msg.Expand.To; i++ {
			covered[i]++
		}
	}
	for i, c := range covered {
		require.Equal(t, 1, c, "asset %d", i)
	}
	run, err := b.ledger.GetRun(ctx, "big", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	require.Equal(t, n, run.Total)
}

// Below ExpandFrom, or with it negative, the fan-out sends item messages.
func TestFlatFanOutBelowExpandFrom(t *testing.T) {
	t.Parallel()
	b := setup(t, bigJob("big", 250))
	c := b.coordinator("c1")
	c.ExpandFrom = -1
	sum, err := c.Run(context.Background(), coordinator.Trigger{Job: "big", At: t0})
	require.NoError(t, err)
	require.Zero(t, sum.ShardMessages)
	require.Len(t, b.queue.keys(t), 250)
}
