package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// bulkSetup is setup with the fx job made Bulk (and changed by edit).
func bulkSetup(t *testing.T, edit func(j *baton.Job)) *bundle {
	t.Helper()
	b := setup(t)
	b.def.Bulk = true
	if edit != nil {
		edit(&b.def)
	}
	b.consumer.Jobs = baton.MustCatalog(b.job())
	return b
}

// shard is the shard message of the fx run's whole catalog.
func (b *bundle) shard() queue.Message {
	return message.NewShard(b.key(b.def.Assets[0]), 1, 0, len(b.def.Assets)).QueueMessage()
}

// itemMessages splits msgs into the messages of assets (by name) and the
// others (derived items, shards).
func itemMessages(t *testing.T, msgs []queue.Message) (assets []string, others int) {
	t.Helper()
	for _, m := range msgs {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		if msg.IsShard() || msg.Derived {
			others++
			continue
		}
		k, err := msg.ItemKey()
		require.NoError(t, err)
		assets = append(assets, k.Asset)
	}
	return assets, others
}

// A bulk job's shard message runs its items in place: each is claimed,
// processed and completed on its own, no item message is sent (the
// derived item's, from the fan-in, is the only message), and the shard
// message is acknowledged with its items' outcomes.
func TestBulkShardRunsInPlace(t *testing.T) {
	t.Parallel()
	b := bulkSetup(t, nil)
	res := b.consumer.Handle(t.Context(), time.Time{}, b.deliveries(b.shard()))
	require.Empty(t, res.Failed)
	require.Len(t, res.Items, 1)
	out := res.Items[0]
	require.Equal(t, consumer.StatusRan, out.Status)
	require.Zero(t, out.HandedOver)
	require.Len(t, out.Ran, len(b.def.Assets))
	for i, o := range out.Ran {
		require.Equal(t, b.def.Assets[i], o.Asset)
		require.Equal(t, consumer.StatusSucceeded, o.Status, o.Asset)
		require.Equal(t, 1, o.Attempt)
	}
	sent := b.work.take()
	assets, others := itemMessages(t, sent)
	require.Empty(t, assets, "no item message of an asset")
	// The derived item's message, from the fan-in: once, or once per last
	// input when several end together (their claims dedupe).
	require.Positive(t, others, "the derived item's message, from the fan-in")
	for _, a := range b.def.Assets {
		it := b.item(t, a)
		require.Equal(t, ledger.ItemSucceeded, it.State, a)
		require.Equal(t, int64(1), it.Fence, "%s claimed with the shard's fence", a)
		require.Equal(t, 1, b.proc.count(b.key(a)), "%s ran once", a)
	}
	b.drain(t, b.deliveries(sent...))
	run, err := b.ledger.GetRun(t.Context(), "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State, "settled by the shard's items and the derived item")

	// A duplicate of the shard message runs nothing again.
	again := b.consumer.Handle(t.Context(), time.Time{}, b.deliveries(b.shard()))
	require.Empty(t, again.Failed)
	for _, o := range again.Items[0].Ran {
		require.Equal(t, consumer.StatusDuplicate, o.Status, o.Asset)
	}
	require.Empty(t, b.work.take())
	require.Equal(t, len(b.def.Assets)+1, b.proc.total(), "every item ran once")
}

// An item of a bulk shard that fails with attempts left is handed over as
// an ordinary item message, and retries on its own; the others end in
// place. A hand-over that cannot be sent leaves the shard message to be
// redelivered, whose redelivery runs the failed item again in place and
// nothing else.
func TestBulkFailingItemRetriesOnItsOwn(t *testing.T) {
	t.Parallel()
	b := bulkSetup(t, nil)
	bad := b.key(b.def.Assets[2])
	b.proc.setOverride(func(_ context.Context, task baton.Task) ([]byte, error, bool) {
		if task.Key == bad && task.Attempt < 3 {
			return nil, errors.New("upstream unavailable"), true
		}
		return nil, nil, false
	})
	// The first hand-over cannot be sent: the shard message stays.
	sends := 0
	b.work.setBefore(func(msgs []queue.Message) error {
		if assets, _ := itemMessages(t, msgs); len(assets) > 0 {
			sends++
			if sends == 1 {
				return errors.New("queue unavailable")
			}
		}
		return nil
	})
	batch := b.deliveries(b.shard())
	res := b.consumer.Handle(t.Context(), time.Time{}, batch)
	require.Len(t, res.Failed, 1)
	require.ErrorContains(t, res.Failed[0].Err, "handed over 0 of 1 items")
	require.Equal(t, ledger.ItemFailed, b.item(t, bad.Asset).State)

	res = b.consumer.Handle(t.Context(), time.Time{}, redeliver(batch, res))
	require.Empty(t, res.Failed)
	out := res.Items[0]
	require.Equal(t, consumer.StatusRan, out.Status)
	require.Equal(t, 1, out.HandedOver)
	for _, o := range out.Ran {
		want := consumer.StatusDuplicate
		if o.Asset == bad.Asset {
			want = consumer.StatusFailed
			require.Equal(t, 2, o.Attempt, "the redelivery retried it")
		}
		require.Equal(t, want, o.Status, o.Asset)
	}
	assets, _ := itemMessages(t, b.work.all())
	require.Equal(t, []string{bad.Asset}, assets, "only the failed item was handed over")

	b.drain(t, b.deliveries(b.work.take()...))
	it := b.item(t, bad.Asset)
	require.Equal(t, ledger.ItemSucceeded, it.State)
	require.Equal(t, 3, it.Attempt, "its third attempt, from its own message")
	for _, a := range b.def.Assets {
		want := 1
		if a == bad.Asset {
			want = 3
		}
		require.Equal(t, want, b.proc.count(b.key(a)), a)
	}
	run, err := b.ledger.GetRun(t.Context(), "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
}

// A crash mid-shard leaves some items terminal and one claimed by the
// dead consumer: the shard message is redelivered, its redelivery skips
// the terminal items, hands over the item whose claim is still live, and
// runs the rest; the item handed over runs once its claim has run out.
// Nothing is lost or run twice.
func TestBulkShardRedeliveredAfterACrash(t *testing.T) {
	t.Parallel()
	b := bulkSetup(t, nil)
	ctx := t.Context()
	lease := jobspec.ItemLease(b.def, b.def.Assets[0])
	// The dead consumer ended the first two items and held the third.
	for i, a := range b.def.Assets[:3] {
		it, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: b.key(a), Owner: "dead", LeaseUntil: b.clock.Now().Add(lease), Fence: 1, MaxAttempts: 5, Now: b.clock.Now()})
		require.NoError(t, err)
		if i < 2 {
			_, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: b.key(a), Owner: "dead", Attempt: it.Attempt, Result: []byte(`{}`), Now: b.clock.Now()})
			require.NoError(t, err)
		}
	}
	batch := b.deliveries(b.shard())
	batch[0].ReceiveCount = 2
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.Empty(t, res.Failed)
	out := res.Items[0]
	require.Equal(t, consumer.StatusRan, out.Status)
	require.Equal(t, 1, out.HandedOver)
	st := map[string]string{}
	for _, o := range out.Ran {
		st[o.Asset] = o.Status
	}
	require.Equal(t, consumer.StatusDuplicate, st[b.def.Assets[0]])
	require.Equal(t, consumer.StatusDuplicate, st[b.def.Assets[1]])
	require.Equal(t, consumer.StatusHeld, st[b.def.Assets[2]])
	sent := b.work.take()
	assets, _ := itemMessages(t, sent)
	require.Equal(t, []string{b.def.Assets[2]}, assets)

	// The dead consumer's claim runs out; the handed-over item runs.
	b.clock.Advance(lease + b.def.Limits.ClockSkew + time.Second)
	b.drain(t, b.deliveries(sent...))
	for i, a := range b.def.Assets {
		require.Equal(t, ledger.ItemSucceeded, b.item(t, a).State, a)
		want := 1
		if i < 2 {
			want = 0 // ended by the dead consumer
		}
		require.Equal(t, want, b.proc.count(b.key(a)), a)
	}
	run, err := b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	// The dead consumer's results are no bars: the derived DXY cannot be
	// computed from them, so the run settles partial, with every asset.
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, len(b.def.Assets), run.Succeeded)
}

// When the invocation's deadline less the job's margin comes while a
// shard runs, the items not started are handed over as item messages
// before it, not started (no claim, no attempt spent), and the shard
// message is acknowledged: one invocation's timeout does not bound a
// shard.
func TestBulkShardHandsOverAtTheDeadline(t *testing.T) {
	t.Parallel()
	b := bulkSetup(t, func(j *baton.Job) { j.Limits.Concurrency = 1 })
	deadline := b.clock.Now().Add(time.Minute)
	third := b.key(b.def.Assets[2])
	b.proc.setOverride(func(_ context.Context, task baton.Task) ([]byte, error, bool) {
		if task.Key == third {
			b.clock.Set(deadline.Add(-b.def.Limits.DeadlineMargin)) // it took until the margin
		}
		return nil, nil, false
	})
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(time.Hour))
	defer cancel()
	res := b.consumer.Handle(ctx, deadline, b.deliveries(b.shard()))
	require.Empty(t, res.Failed)
	out := res.Items[0]
	require.Equal(t, consumer.StatusRan, out.Status)
	require.Equal(t, len(b.def.Assets)-3, out.HandedOver)
	for i, o := range out.Ran {
		want := consumer.StatusSucceeded
		if i >= 3 {
			want = consumer.StatusNotStarted
		}
		require.Equal(t, want, o.Status, o.Asset)
	}
	sent := b.work.take()
	assets, _ := itemMessages(t, sent)
	require.Equal(t, b.def.Assets[3:], assets)
	for _, a := range b.def.Assets[3:] {
		_, err := b.ledger.GetItem(ctx, b.key(a))
		require.ErrorIs(t, err, ledger.ErrNotFound, "%s not claimed", a)
	}
	b.drain(t, b.deliveries(sent...))
	for _, a := range jobspec.ItemNames(b.def) {
		require.Equal(t, ledger.ItemSucceeded, b.item(t, a).State, a)
		require.Equal(t, 1, b.proc.count(b.key(a)), a)
	}
}

// A bulk item that fails with a retry delay (RetryAfter) is handed over
// as an item message carrying the delay, so its next attempt waits it as
// an item message's would; a delay past the longest a send can carry is
// clamped to it.
func TestBulkHandOverCarriesTheRetryDelay(t *testing.T) {
	t.Parallel()
	b := bulkSetup(t, nil)
	slow, long := b.key(b.def.Assets[1]), b.key(b.def.Assets[3])
	b.proc.setOverride(func(_ context.Context, task baton.Task) ([]byte, error, bool) {
		switch task.Key {
		case slow:
			return nil, baton.RetryAfter(40*time.Second, errors.New("HTTP 429")), true
		case long:
			return nil, baton.RetryAfter(2*time.Hour, errors.New("HTTP 503")), true
		}
		return nil, nil, false
	})
	res := b.consumer.Handle(t.Context(), time.Time{}, b.deliveries(b.shard()))
	require.Empty(t, res.Failed)
	require.Equal(t, 2, res.Items[0].HandedOver)
	delays := map[string]time.Duration{}
	for _, m := range b.work.all() {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		if k, err := msg.ItemKey(); err == nil && !msg.IsShard() && !msg.Derived {
			delays[k.Asset] = m.Delay
		}
	}
	require.Equal(t, map[string]time.Duration{slow.Asset: 40 * time.Second, long.Asset: queue.MaxSendDelay}, delays)
}

// Near its last receive a bulk shard message is expanded into its items'
// messages instead of run in place: receives that ended without a verdict
// (batches cut off or killed while its items ran) must not leave its
// items to the queue's redrive.
func TestBulkShardNearItsLastReceiveIsExpanded(t *testing.T) {
	t.Parallel()
	b := bulkSetup(t, nil)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 5
	batch := b.deliveries(b.shard())
	batch[0].ReceiveCount = 4
	res := b.consumer.Handle(t.Context(), time.Time{}, batch)
	require.Empty(t, res.Failed)
	require.Equal(t, consumer.StatusExpanded, res.Items[0].Status)
	assets, others := itemMessages(t, b.work.all())
	require.ElementsMatch(t, b.def.Assets, assets, "one message per item")
	require.Zero(t, others)
	require.Zero(t, b.proc.total(), "nothing run in place")
	b.drain(t, b.deliveries(b.work.take()...))
	for _, a := range b.def.Assets {
		require.Equal(t, ledger.ItemSucceeded, b.item(t, a).State, a)
	}
}
