package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// A shard message expands into its range's item messages, with its
// fence; a redelivery after a failed send sends the range again, and the
// claims absorb the duplicates: every item runs once, the run settles.
func TestShardMessageExpands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	n := len(b.def.Assets)
	shard := message.NewShard(b.key(b.def.Assets[0]), 1, 0, n).QueueMessage()

	// The first expansion's second batch fails: the shard message stays.
	calls := 0
	b.work.setBefore(func([]queue.Message) error {
		calls++
		if calls == 1 {
			return errors.New("queue unavailable")
		}
		return nil
	})
	batch := b.deliveries(shard)
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.Len(t, res.Failed, 1)
	require.ErrorContains(t, res.Failed[0].Err, "sent 0 of 7 item messages")
	require.Equal(t, consumer.StatusFailed, res.Items[0].Status)

	res = b.consumer.Handle(ctx, time.Time{}, redeliver(batch, res))
	require.Empty(t, res.Failed)
	require.Equal(t, consumer.StatusExpanded, res.Items[0].Status)
	sent := b.work.all()
	require.Len(t, sent, n)
	for i, m := range sent {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		require.False(t, msg.IsShard())
		require.Equal(t, b.key(b.def.Assets[i]).String(), msg.Key)
		require.Equal(t, int64(1), msg.Fence)
	}
	// A duplicate of the shard message sends the range once more.
	b.work.take()
	again := b.consumer.Handle(ctx, time.Time{}, b.deliveries(shard))
	require.Equal(t, consumer.StatusExpanded, again.Items[0].Status)
	b.drain(t, b.deliveries(append(sent, b.work.take()...)...))
	for _, a := range jobspec.ItemNames(b.def) {
		require.Equal(t, ledger.ItemSucceeded, b.item(t, a).State, a)
		require.Equal(t, 1, b.proc.count(b.key(a)), "%s ran once", a)
	}
	run, err := b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
}

// A shard message that does not fit its run is dead-lettered with the
// reason, and sends nothing.
func TestBadShardMessageIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter = b.dlq
	n := len(b.def.Assets)
	other := ledger.RunID{Job: "fx", Nominal: tick.Add(-time.Minute), Generation: 1}
	for _, tc := range []struct {
		name string
		msg  message.Message
		want string
	}{
		{"first item is not the key's", message.NewShard(b.key(b.def.Assets[0]), 1, 1, 3), "item 1 of the run is"},
		{"past the catalog", message.NewShard(b.key(b.def.Assets[0]), 1, 0, n+5), "has 7 assets"},
		{"no run", message.NewShard(ledger.ItemKey{Run: other, Asset: b.def.Assets[0]}, 1, 0, n), "the tick has no run"},
		{"a fence the run cannot account for", message.NewShard(b.key(b.def.Assets[0]), 9, 0, n), "fence"},
	} {
		res := b.consumer.Handle(context.Background(), time.Time{}, b.deliveries(tc.msg.QueueMessage()))
		require.Len(t, res.DeadLettered, 1, tc.name)
		require.ErrorContains(t, res.DeadLettered[0].Err, tc.want, tc.name)
		require.Empty(t, b.work.take(), "%s: nothing sent", tc.name)
	}
	dead := b.dlq.take()
	require.Len(t, dead, 4)
	require.Contains(t, dead[0].Attributes[message.AttrError], "item 1 of the run is")
}
