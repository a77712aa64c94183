package consumer_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
)

// Invariant 10: a message the ledger does not vouch for (no run for its
// tick, a generation never opened, a future tick, a fence the run never
// recorded) is dead-lettered at once with its reason and writes nothing;
// one of a superseded generation is acknowledged as superseded.
func TestActsOnlyOnVouchedWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter = b.dlq
	ctx := context.Background()
	b.clock.Set(tick.Add(5 * time.Second))

	noRun := ledger.RunID{Job: "fx", Nominal: tick.Add(-time.Hour), Generation: 1}
	future := ledger.RunID{Job: "fx", Nominal: tick.Add(45 * time.Minute), Generation: 1}
	never := ledger.RunID{Job: "fx", Nominal: tick, Generation: 9}
	cases := map[string]struct {
		msg  queue.Message
		want string
	}{
		"no run":     {message.New(ledger.ItemKey{Run: noRun, Asset: "EURUSD"}, 1, false).QueueMessage(), "the tick has no run"},
		"future":     {message.New(ledger.ItemKey{Run: future, Asset: "EURUSD"}, 1, false).QueueMessage(), "is in the future"},
		"never":      {message.New(ledger.ItemKey{Run: never, Asset: "EURUSD"}, 9, false).QueueMessage(), "generation 9 was never opened"},
		"high fence": {message.New(b.key("EURUSD"), 7, false).QueueMessage(), "fence 7 is above any fence the run recorded (latest 1)"},
	}
	for name, tc := range cases {
		res := b.consumer.Handle(ctx, time.Time{}, b.deliveries(tc.msg))
		require.Len(t, res.Items, 1, name)
		require.Equal(t, consumer.StatusUnvouched, res.Items[0].Status, name)
		require.Len(t, res.DeadLettered, 1, "%s: dead-lettered at the first receive", name)
		require.ErrorIs(t, res.DeadLettered[0].Err, consumer.ErrUnvouched, name)
		require.ErrorContains(t, res.DeadLettered[0].Err, tc.want, name)
		require.Empty(t, res.Failed, name)
	}
	require.Len(t, b.dlq.all(), len(cases))
	for _, m := range b.dlq.all() {
		require.Contains(t, m.Attributes[message.AttrError], "not vouched for by the ledger")
	}
	for _, id := range []ledger.RunID{noRun, future, never} {
		_, err := b.ledger.GetItem(ctx, ledger.ItemKey{Run: id, Asset: "EURUSD"})
		require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written for %s", id)
	}
	_, err := b.ledger.GetItem(ctx, b.key("EURUSD"))
	require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written for the unvouched fence")
	require.Zero(t, b.proc.count(b.key("EURUSD")))

	// A forced replay opens generation 2: generation 1's messages are
	// superseded, acknowledged without a write.
	_, out, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: tick, Fence: 2, Force: true, Now: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)
	b.clock.Advance(2 * time.Second) // past the run cache
	res := b.consumer.Handle(ctx, time.Time{}, b.deliveries(b.message("GBPUSD")))
	require.Empty(t, res.Failed)
	require.Empty(t, res.DeadLettered)
	require.Equal(t, consumer.StatusSuperseded, res.Items[0].Status)
	it, err := b.ledger.GetItem(ctx, b.key("GBPUSD"))
	require.NoError(t, err, "the superseded item is recorded as such")
	require.Equal(t, ledger.ItemCancelled, it.State)
	require.Equal(t, consumer.SupersededPrefix+"fx@"+tick.Format(time.RFC3339)+"#2", it.Error)
	require.Zero(t, b.proc.count(b.key("GBPUSD")), "nothing processed")

	// Generation 2 was opened by fence 2: a message of it carrying fence 1
	// was sent by no coordinator of the generation.
	gen2 := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: tick, Generation: 2}, Asset: "EURUSD"}
	res = b.consumer.Handle(ctx, time.Time{}, b.deliveries(message.New(gen2, 1, false).QueueMessage()))
	require.Equal(t, consumer.StatusUnvouched, res.Items[0].Status)
	require.Len(t, res.DeadLettered, 1)
	require.ErrorContains(t, res.DeadLettered[0].Err, "fence 1 is below the fence 2 that opened generation 2")
	_, err = b.ledger.GetItem(ctx, gen2)
	require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written for the low fence")
}

// countingLedger counts GetRun calls.
type countingLedger struct {
	ledger.Store
	getRuns atomic.Int64
}

func (c *countingLedger) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	c.getRuns.Add(1)
	return c.Store.GetRun(ctx, job, nominal)
}

// With a run cache, vouching costs few reads per item: one run read
// answers for the run's messages for a second.
func TestVouchReadsPerItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	counting := &countingLedger{Store: b.ledger}
	b.consumer.Ledger, b.consumer.Runs = counting, &consumer.RunCache{}
	// A clock that stands still: the cache's answers last a second, and on
	// a loaded machine the 105 messages may take longer than that.
	frozen := time.Now()
	b.consumer.NowFunc = func() time.Time { return frozen }
	var msgs []queue.Message
	for range 15 {
		for _, a := range fx.Assets {
			msgs = append(msgs, b.message(a))
		}
	}
	for lo := 0; lo < len(msgs); lo += 10 {
		res := b.consumer.Handle(context.Background(), time.Time{}, b.deliveries(msgs[lo:min(lo+10, len(msgs))]...))
		require.Empty(t, res.DeadLettered)
	}
	perItem := float64(counting.getRuns.Load()) / float64(len(msgs))
	t.Logf("run reads per message: %.3f (%d reads, %d messages)", perItem, counting.getRuns.Load(), len(msgs))
	require.LessOrEqual(t, perItem, 0.05)
}

// Poison of any size the queue accepts reaches the dead-letter queue with
// its reason: a body that would not fit with the reason is cut to fit,
// with its original id and size in attributes.
func TestHugePoisonIsDeadLetteredWithItsReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := openDB(t)
	dlq, err := sqlite.OpenQueue(t.Context(), db, "dlq", nil)
	require.NoError(t, err)
	b.consumer.DeadLetter = dlq
	huge := `{"v":1,"key":"` + strings.Repeat("k", 900<<10) + `","fence":1}` // 900 KiB: SQS takes up to 1 MiB
	d := queue.Delivery{MessageID: "poison-1", Body: []byte(huge), ReceiveCount: 1,
		Attributes: map[string]string{"trace": strings.Repeat("t", 10<<10)}}
	res := b.consumer.Handle(t.Context(), time.Time{}, []queue.Delivery{d})
	require.Empty(t, res.Failed)
	require.Len(t, res.DeadLettered, 1)
	require.Less(t, len(res.DeadLettered[0].Err.Error()), 1024, "the reason is bounded")

	got, err := dlq.Receive(t.Context(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, got, 1)
	m := got[0]
	require.Contains(t, m.Attributes[message.AttrError], "longer than 256 bytes")
	require.Equal(t, "poison-1", m.Attributes[message.AttrOriginalID])
	require.Equal(t, strconv.Itoa(len(huge)), m.Attributes[message.AttrOriginalBytes])
	require.True(t, strings.HasPrefix(huge, string(m.Body)), "the body is the original's start")
	require.LessOrEqual(t, queue.Message{Body: m.Body, Attributes: m.Attributes}.Size(), queue.MaxBatchBytes)
}

// Invariant 11: a run settles when its last item ends, by the consumer
// that ends it, with no coordinator involved.
func TestRunSettlesWhenItsLastItemEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.drain(t, b.deliveries(b.fanOut()...))
	run, err := b.ledger.GetRun(context.Background(), "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, len(fx.Assets)+1, run.Succeeded)
}
