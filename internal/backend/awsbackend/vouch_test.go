package awsbackend_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// The consumer's refusals on DynamoDB and SQS: a generation never
// opened, a future tick and a fence no coordinator recorded are
// dead-lettered at once with their reasons and write nothing; a message of
// a superseded generation is acknowledged as superseded and its item
// cancelled with a reason status counts; a malformed body larger than the
// dead-letter queue takes reaches it cut to fit, with its reason, original
// id and size.
func TestConsumerRefusalsOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	require.NotNil(t, b.DeadLetter)
	ctx := t.Context()

	now := time.Now().UTC()
	tick := now.Truncate(time.Minute).Add(-time.Minute)
	shards := fanin.Shards(len(fx.Job(nil).ItemNames()))
	gen1, _, err := b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: fx.Name, Nominal: tick, Fence: 3, Shards: shards, Now: now})
	require.NoError(t, err)
	gen2, _, err := b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: fx.Name, Nominal: tick, Fence: 4, Shards: shards, Force: true, Now: now})
	require.NoError(t, err)
	require.Equal(t, 2, gen2.ID.Generation)

	key := func(run ledger.RunID, asset string) ledger.ItemKey { return ledger.ItemKey{Run: run, Asset: asset} }
	never := ledger.RunID{Job: fx.Name, Nominal: tick, Generation: 3}
	future := ledger.RunID{Job: fx.Name, Nominal: now.Truncate(time.Minute).Add(time.Hour), Generation: 1}
	deliver := func(id string, body []byte) queue.Delivery {
		return queue.Delivery{MessageID: id, ReceiptHandle: id, Body: body, ReceiveCount: 1, SentAt: now}
	}
	huge := `{"v":1,"key":"` + strings.Repeat("k", 900<<10) + `","fence":1}`
	batch := []queue.Delivery{
		deliver("never", message.New(key(never, "EURUSD"), 4, false).Encode()),
		deliver("future", message.New(key(future, "EURUSD"), 4, false).Encode()),
		deliver("fence", message.New(key(gen2.ID, "EURUSD"), 99, false).Encode()),
		deliver("superseded", message.New(key(gen1.ID, "GBPUSD"), 3, false).Encode()),
		deliver("huge", []byte(huge)),
	}
	cons := &consumer.Consumer{Ledger: b.Ledger, Queue: b.Work, DeadLetter: b.DeadLetter, Jobs: baton.MustCatalog(fx.Job(nil)),
		Effects: b.Effects, Owner: "refusals", MaxReceives: 5}
	out := cons.Handle(ctx, time.Time{}, batch)
	require.Empty(t, out.Failed, "every refusal is final")
	status := map[string]string{}
	for _, o := range out.Items {
		status[o.MessageID] = o.Status
	}
	require.Equal(t, consumer.StatusUnvouched, status["never"])
	require.Equal(t, consumer.StatusUnvouched, status["future"])
	require.Equal(t, consumer.StatusUnvouched, status["fence"])
	require.Equal(t, consumer.StatusSuperseded, status["superseded"])
	require.Len(t, out.DeadLettered, 4)

	for _, k := range []ledger.ItemKey{key(never, "EURUSD"), key(future, "EURUSD"), key(gen2.ID, "EURUSD")} {
		_, err := b.Ledger.GetItem(ctx, k)
		require.ErrorIs(t, err, ledger.ErrNotFound, "%s: nothing written", k)
	}
	old, err := b.Ledger.GetItem(ctx, key(gen1.ID, "GBPUSD"))
	require.NoError(t, err)
	require.Equal(t, ledger.ItemCancelled, old.State)
	require.Equal(t, consumer.SupersededPrefix+gen2.ID.String(), old.Error, "the reason status counts superseded items by")

	reasons := map[string]map[string]string{}
	deadline := time.Now().Add(10 * time.Second)
	for len(reasons) < 4 && time.Now().Before(deadline) {
		ds, err := b.DeadLetter.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute, Now: time.Now()})
		require.NoError(t, err)
		for _, d := range ds {
			id := d.Attributes[message.AttrOriginalID] // set on a body cut to fit
			for _, sent := range batch {
				if string(sent.Body) == string(d.Body) {
					id = sent.MessageID
				}
			}
			reasons[id] = d.Attributes
			reasons[id]["body"] = strconv.Itoa(len(d.Body))
		}
	}
	require.Len(t, reasons, 4, "%v", reasons)
	require.Contains(t, reasons["never"][message.AttrError], "generation 3 was never opened")
	require.Contains(t, reasons["future"][message.AttrError], "in the future")
	require.Contains(t, reasons["fence"][message.AttrError], "fence 99 is above any fence the run recorded")
	require.NotEmpty(t, reasons["huge"][message.AttrError])
	require.Equal(t, strconv.Itoa(len(huge)), reasons["huge"][message.AttrOriginalBytes])
	n, err := strconv.Atoi(reasons["huge"]["body"])
	require.NoError(t, err)
	require.Less(t, n, len(huge), "cut to fit")
}
