package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

func TestStopReleasesWhatItCutsShort(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.def.Limits.Concurrency = 1
	b.consumer.Jobs = baton.MustCatalog(b.job())
	stop := make(chan struct{})
	b.consumer.Stop = stop
	// The first item's processor is running when the stop comes; it
	// returns its context's error.
	b.proc.setOverride(func(ctx context.Context, task baton.Task) ([]byte, error, bool) {
		close(stop)
		<-ctx.Done()
		return nil, ctx.Err(), true
	})
	batch := b.deliveries(b.fanOut()...)
	res := b.consumer.Handle(context.Background(), t0.Add(time.Minute), batch)
	require.Len(t, res.Failed, len(batch), "every message is redelivered")
	require.Empty(t, res.DeadLettered)
	for _, f := range res.Failed {
		require.ErrorIs(t, f.Err, consumer.ErrStopped)
	}
	got := map[string]int{}
	for _, o := range res.Items {
		got[o.Status]++
	}
	require.Equal(t, map[string]int{consumer.StatusReleased: len(batch)}, got)
	require.Equal(t, 1, b.proc.total(), "nothing started after the stop")

	// The cut item is RUNNING with its lease ended: claimable at once, no
	// verdict recorded.
	items, err := b.ledger.ListItems(context.Background(), b.run)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, ledger.ItemRunning, items[0].State)
	require.False(t, items[0].LeaseUntil.After(b.clock.Now()), "lease released")

	// Another consumer finishes the redelivered messages, once the skew
	// allowance on the released lease has passed.
	b.clock.Advance(b.def.Limits.ClockSkew)
	other := *b.consumer
	other.Owner, other.Stop = "consumer-2", nil
	b.proc.setOverride(nil)
	res = other.Handle(context.Background(), t0.Add(time.Minute), redeliver(batch, res))
	require.Empty(t, res.Failed)
	items, err = b.ledger.ListItems(context.Background(), b.run)
	require.NoError(t, err)
	for _, it := range items {
		if it.Key.Asset == items[0].Key.Asset || !jobspec.IsDerived(b.def, it.Key.Asset) {
			require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		}
	}
}

func TestStopLetsAFinishedProcessorComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stop := make(chan struct{})
	b.consumer.Stop = stop
	b.proc.setOverride(func(ctx context.Context, task baton.Task) ([]byte, error, bool) {
		close(stop)
		return []byte(`1.0`), nil, true // ignores the stop and returns a result
	})
	batch := b.deliveries(b.message(b.def.Assets[0]))
	res := b.consumer.Handle(context.Background(), t0.Add(time.Minute), batch)
	require.Empty(t, res.Failed)
	require.Equal(t, consumer.StatusSucceeded, res.Items[0].Status)
}

func TestStopAtLastReceiveIsNotDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 2
	stop := make(chan struct{})
	close(stop)
	b.consumer.Stop = stop
	batch := b.deliveries(b.message(b.def.Assets[0]))
	batch[0].ReceiveCount = 2
	res := b.consumer.Handle(context.Background(), t0.Add(time.Minute), batch)
	// Near its last receive, a message given back is sent again as a new
	// one (acknowledged), never left to the queue's own redrive.
	require.Empty(t, res.Failed)
	require.Empty(t, res.DeadLettered)
	require.Empty(t, b.dlq.all())
	require.Equal(t, consumer.StatusRequeued, res.Items[0].Status)
	require.Len(t, b.work.take(), 1, "sent again")
}

// A message not started for lack of time (its batch's deadline too near),
// at the receive before its last, is sent again as a new message rather
// than left to be dead-lettered: a loaded consumer whose batches run out
// of time must not lose items to the queue's redrive.
func TestNotStartedNearLastReceiveIsRequeued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 5
	batch := b.deliveries(b.message(b.def.Assets[0]))
	batch[0].ReceiveCount = 3
	res := b.consumer.Handle(context.Background(), t0.Add(time.Millisecond), batch) // within the deadline margin
	require.Equal(t, consumer.StatusNotStarted, res.Items[0].Status)
	require.Len(t, res.Failed, 1, "redelivered: receives are left")

	batch[0].ReceiveCount = 4
	res = b.consumer.Handle(context.Background(), t0.Add(time.Millisecond), batch)
	require.Empty(t, res.Failed)
	require.Empty(t, res.DeadLettered)
	require.Equal(t, consumer.StatusRequeued, res.Items[0].Status)
	require.Len(t, b.work.take(), 1, "sent again")
	require.Empty(t, b.dlq.all())
}
