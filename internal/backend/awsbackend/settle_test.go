package awsbackend_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// finishCrash fails FinishRun while crash is set, as a consumer that dies
// between its shard's mark and the run's finish would.
type finishCrash struct {
	ledger.Store
	crash atomic.Bool
}

func (f *finishCrash) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	if f.crash.Load() {
		return ledger.Run{}, errors.New("crashed on purpose")
	}
	return f.Store.FinishRun(ctx, p)
}

// On DynamoDB: a run of 300 items settles when its last item ends, by the
// consumer that ends it; a crash between the shards' marks and the run's
// finish is recovered by the redelivery of the last item's message.
func TestLargeRunSettlesAfterACrashOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	ctx := t.Context()
	l := &finishCrash{Store: b.Ledger}
	assets := make([]string, 300)
	for i := range assets {
		assets[i] = fmt.Sprintf("P%03d", i)
	}
	j := baton.Job{Name: "wide", Schedule: "rate(1 minute)", Assets: assets,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("ok"), nil }),
		Limits:    baton.Limits{ItemLease: time.Minute}}
	var clock atomic.Int64
	now := time.Now().UTC()
	clock.Store(now.UnixNano())
	cons := &consumer.Consumer{Ledger: l, Queue: &sentMessages{}, Jobs: baton.MustCatalog(j), Effects: b.Effects, Owner: "c1",
		NowFunc: func() time.Time { return time.Unix(0, clock.Load()).UTC() }}
	tick := now.Truncate(time.Minute).Add(-time.Minute)
	run, _, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Nominal: tick, Fence: 1, Shards: fanin.Shards(len(assets)), Now: now})
	require.NoError(t, err)
	_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(assets), Done: true, Now: now})
	require.NoError(t, err)

	delivery := func(asset string, receives int) queue.Delivery {
		m := message.New(ledger.ItemKey{Run: run.ID, Asset: asset}, 1, false).QueueMessage()
		return queue.Delivery{MessageID: asset, ReceiptHandle: asset, Body: m.Body, Attributes: m.Attributes, ReceiveCount: receives, SentAt: now}
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
		out := cons.Handle(ctx, time.Time{}, batch)
		require.Empty(t, out.Failed)
	}
	require.Equal(t, ledger.RunFannedOut, state().State, "one item left")

	l.crash.Store(true)
	out := cons.Handle(ctx, time.Time{}, []queue.Delivery{delivery(assets[len(assets)-1], 1)})
	require.Empty(t, out.Failed)
	require.Equal(t, ledger.RunFannedOut, state().State, "the crash left the run fanned out")
	marks, err := l.ListMarks(ctx, run.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, marks, 5, "every shard marked")

	l.crash.Store(false)
	clock.Add(int64(2 * time.Minute))
	out = cons.Handle(ctx, time.Time{}, []queue.Delivery{delivery(assets[len(assets)-1], 2)})
	require.Empty(t, out.Failed)
	r := state()
	require.Equal(t, ledger.RunComplete, r.State, "settled by the redelivery")
	require.Equal(t, len(assets), r.Succeeded)
}
