package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/clocktest"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// finishCrash fails FinishRun while crash is set, as a consumer that dies
// between its shard's mark and the run's finish would, and counts the
// whole-run lists.
type finishCrash struct {
	ledger.Store
	crash     atomic.Bool
	wholeRuns atomic.Int64
	// ranges and read count ListItemRange calls and the records they
	// returned.
	ranges, read atomic.Int64
}

func (f *finishCrash) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	items, err := f.Store.ListItemRange(ctx, run, first, last)
	f.ranges.Add(1)
	f.read.Add(int64(len(items)))
	return items, err
}

func (f *finishCrash) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	if f.crash.Load() {
		return ledger.Run{}, errors.New("crashed on purpose")
	}
	return f.Store.FinishRun(ctx, p)
}

func (f *finishCrash) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	f.wholeRuns.Add(1)
	return f.Store.ListItems(ctx, run)
}

// Invariant 11 at any size: a run of 300 items settles when its last item
// ends, by the consumer that ends it, without listing the run whole; a
// consumer that crashed between its shard's mark and the run's finish
// leaves the message redelivered, and the redelivery finishes the run.
func TestLargeRunSettlesByItsLastItemAndAfterACrash(t *testing.T) {
	t.Parallel()
	led, effects := newStores(t)
	l := &finishCrash{Store: led}
	assets := make([]string, 300)
	for i := range assets {
		assets[i] = fmt.Sprintf("P%03d", i)
	}
	j := baton.Job{Name: "wide", Schedule: "rate(1 minute)", Assets: assets,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("ok"), nil }),
		Limits:    baton.Limits{ItemLease: time.Minute}}
	clock := clocktest.New(t0)
	c := &consumer.Consumer{Ledger: l, Queue: &memQueue{}, Jobs: baton.MustCatalog(j), Effects: effects, Owner: "c1", NowFunc: clock.Now}
	ctx := t.Context()
	run, _, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Nominal: tick, Fence: 1, Shards: fanin.Shards(len(assets)), Now: tick})
	require.NoError(t, err)
	_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(assets), Done: true, Now: tick})
	require.NoError(t, err)

	delivery := func(asset string, receives int) queue.Delivery {
		m := message.New(ledger.ItemKey{Run: run.ID, Asset: asset}, 1, false).QueueMessage()
		return queue.Delivery{MessageID: asset, ReceiptHandle: asset, Body: m.Body, Attributes: m.Attributes, ReceiveCount: receives, SentAt: clock.Now()}
	}
	state := func() ledger.Run {
		r, err := l.GetRun(ctx, j.Name, tick)
		require.NoError(t, err)
		return r
	}
	for i := 0; i < len(assets)-1; i += 10 {
		batch := make([]queue.Delivery, 0, 10)
		for _, a := range assets[i:min(i+10, len(assets)-1)] {
			batch = append(batch, delivery(a, 1))
		}
		res := c.Handle(ctx, time.Time{}, batch)
		require.Empty(t, res.Failed)
		require.Equal(t, ledger.RunFannedOut, state().State, "items left")
	}

	t.Run("last item, crash before the finish", func(t *testing.T) {
		l.crash.Store(true)
		res := c.Handle(ctx, time.Time{}, []queue.Delivery{delivery(assets[len(assets)-1], 1)})
		require.Empty(t, res.Failed, "the item is done; the settle failing is logged")
		require.Equal(t, ledger.RunFannedOut, state().State, "the crash left the run fanned out")
		marks, err := l.ListMarks(ctx, run.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, marks, 5, "every shard marked")
	})
	t.Run("redelivered past the item lease", func(t *testing.T) {
		l.crash.Store(false)
		clock.Advance(2 * time.Minute)
		res := c.Handle(ctx, time.Time{}, []queue.Delivery{delivery(assets[len(assets)-1], 2)})
		require.Empty(t, res.Failed)
		r := state()
		require.Equal(t, ledger.RunComplete, r.State)
		require.Equal(t, len(assets), r.Succeeded)
	})
	require.Zero(t, l.wholeRuns.Load(), "no consumer listed the run whole")
}

// The items of a batch that share a shard settle it once, when the batch
// is done: one read per batch of the shard's probe (its last names)
// while it is in flight, and one list of the shard by the batch
// that ends it. The run finishes with the last batch, before Handle
// returns.
func TestBatchSettlesItsShardOnce(t *testing.T) {
	t.Parallel()
	led, effects := newStores(t)
	l := &finishCrash{Store: led}
	assets := make([]string, 300)
	for i := range assets {
		assets[i] = fmt.Sprintf("P%03d", i)
	}
	j := baton.Job{Name: "batched", Schedule: "rate(1 minute)", Assets: assets,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("ok"), nil }),
		Limits:    baton.Limits{ItemLease: time.Minute, Concurrency: 10}}
	clock := clocktest.New(t0)
	c := &consumer.Consumer{Ledger: l, Queue: &memQueue{}, Jobs: baton.MustCatalog(j), Effects: effects, Owner: "c1", NowFunc: clock.Now}
	ctx := t.Context()
	run, _, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Nominal: tick, Fence: 1, Shards: fanin.Shards(len(assets)), Now: tick})
	require.NoError(t, err)
	require.Equal(t, 5, run.Shards) // 60 items each: 6 batches of 10
	_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(assets), Done: true, Now: tick})
	require.NoError(t, err)

	for i := 0; i < len(assets); i += 10 {
		var batch []queue.Delivery
		for _, a := range assets[i : i+10] {
			m := message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false).QueueMessage()
			batch = append(batch, queue.Delivery{MessageID: a, ReceiptHandle: a, Body: m.Body, Attributes: m.Attributes, ReceiveCount: 1, SentAt: clock.Now()})
		}
		l.ranges.Store(0)
		l.read.Store(0)
		res := c.Handle(ctx, time.Time{}, batch)
		require.Empty(t, res.Failed)
		require.Equal(t, int64(1), l.ranges.Load(), "batch %d: one read for its shard", i/10)
		r, err := l.GetRun(ctx, j.Name, tick)
		require.NoError(t, err)
		if (i/10)%6 < 5 {
			require.Zero(t, l.read.Load(), "batch %d: the probe is not claimed yet", i/10)
		} else {
			require.Equal(t, int64(60), l.read.Load(), "batch %d ends its shard: one list of it", i/10)
		}
		if i+10 < len(assets) {
			require.Equal(t, ledger.RunFannedOut, r.State, "after batch %d", i/10)
		} else {
			require.Equal(t, ledger.RunComplete, r.State, "settled by the last batch")
			require.Equal(t, len(assets), r.Succeeded)
		}
	}
}

// While its run still fans out (the coordinator has not marked it fanned
// out yet), a consumer's batches do not each read the run again to
// settle: the run is read where a shard is complete, so the reads per
// message stay within the vouching goal (≤ 0.05), and a shard completed
// meanwhile is left to the coordinator's sweep after its fan-out.
func TestSettleDuringFanOutReadsTheRunPerShardNotPerBatch(t *testing.T) {
	t.Parallel()
	led, effects := newStores(t)
	counting := &countingLedger{Store: led}
	assets := make([]string, 640)
	for i := range assets {
		assets[i] = fmt.Sprintf("F%03d", i)
	}
	j := baton.Job{Name: "fanning", Schedule: "rate(1 minute)", Assets: assets,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil }),
		Limits:    baton.Limits{ItemLease: time.Minute}}
	clock := clocktest.New(t0) // stands still: the run cache's answers last a second
	c := &consumer.Consumer{Ledger: counting, Queue: &memQueue{}, Jobs: baton.MustCatalog(j), Effects: effects, Owner: "c1",
		NowFunc: clock.Now, Runs: &consumer.RunCache{}}
	ctx := t.Context()
	run, _, err := led.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Nominal: tick, Fence: 1, Shards: fanin.Shards(len(assets)), Now: tick})
	require.NoError(t, err)
	_, err = led.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(assets) - 10, Now: tick}) // not done
	require.NoError(t, err)
	for i := 0; i < len(assets); i += 10 {
		batch := make([]queue.Delivery, 0, 10)
		for _, a := range assets[i : i+10] {
			m := message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false).QueueMessage()
			batch = append(batch, queue.Delivery{MessageID: a, ReceiptHandle: a, Body: m.Body, Attributes: m.Attributes, ReceiveCount: 1, SentAt: clock.Now()})
		}
		res := c.Handle(ctx, time.Time{}, batch)
		require.Empty(t, res.Failed)
	}
	perMessage := float64(counting.getRuns.Load()) / float64(len(assets))
	t.Logf("run reads per message while the run fans out: %.3f (%d reads, %d messages, %d shards)", perMessage, counting.getRuns.Load(), len(assets), run.Shards)
	require.LessOrEqual(t, perMessage, 0.05)
	got, err := led.GetRun(ctx, j.Name, tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, got.State, "no consumer finishes a run still fanning out")
}

// finishedByAnother is a ledger on which another settler finishes each
// run just before this one's FinishRun (with the same counts), as when two
// consumers end a run's last items at once: this one's finds it finished.
type finishedByAnother struct{ ledger.Store }

func (l finishedByAnother) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	if _, err := l.Store.FinishRun(ctx, p); err != nil {
		return ledger.Run{}, err
	}
	return l.Store.FinishRun(ctx, p)
}

// A run's chains are started by the settler that finished it, once: a
// settler that finds the run finished by another (its FinishRun refused)
// leaves them to that one, so that the chained run's messages are sent
// once, not by both. The chains start as the consumer function starts
// them: a coordinator without a lease; the test counts what it sends.
func TestChainsStartedByTheRunsFinisherOnly(t *testing.T) {
	t.Parallel()
	for _, finisher := range []bool{true, false} {
		b := setup(t)
		b.def.Chains = []baton.Chain{{Job: "down"}}
		down := baton.Job{Name: "down", Schedule: "rate(1 hour)", Assets: []string{"d1", "d2"},
			Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
		b.consumer.Jobs = baton.MustCatalog(b.job(), down)
		if !finisher {
			b.consumer.Ledger = finishedByAnother{b.ledger}
		}
		chains := &coordinator.Coordinator{Ledger: b.ledger, Queue: b.work, Jobs: b.consumer.Jobs, Owner: "consumer-1", NowFunc: b.clock.Now}
		var calls atomic.Int32
		b.consumer.ChainsFunc = func(ctx context.Context, run ledger.Run) error {
			require.Equal(t, b.run, run.ID)
			require.True(t, run.State.Finished())
			calls.Add(1)
			return chains.StartChains(ctx, run)
		}
		b.drain(t, b.deliveries(b.fanOut()...))
		run, err := ledger.GetRunOf(t.Context(), b.ledger, b.run)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State)
		sent := 0
		for _, m := range b.work.all() {
			msg, err := message.Decode(m.Body)
			require.NoError(t, err)
			k, err := msg.ItemKey()
			require.NoError(t, err)
			if k.Run.Job == "down" {
				sent++
			}
		}
		if finisher {
			require.Equal(t, int32(1), calls.Load(), "the finisher starts the chains")
			require.Equal(t, 2, sent, "the chained run's messages, sent once")
		} else {
			require.Zero(t, calls.Load(), "a settler that found the run finished by another leaves the chains to it")
			require.Zero(t, sent, "and sends none of the chained run's messages")
		}
	}
}
