package awsbackend_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
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
	shards := fanin.Shards(len(jobspec.ItemNames(fx.Job(nil))))
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

// sentMessages is a queue.Sender that keeps what it is sent.
type sentMessages struct {
	mu   sync.Mutex
	msgs []queue.Message
}

func (s *sentMessages) SendBatch(_ context.Context, msgs []queue.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
	return nil
}

// Fan-in once on DynamoDB: with every input delivered three times at once,
// the derived item is enqueued at most twice (once, unless two last
// inputs complete together), not once per copy.
func TestFanInStormOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	ctx := t.Context()
	for round := range 3 {
		now := time.Now().UTC()
		tick := now.Truncate(time.Minute).Add(-time.Duration(round+1) * time.Minute)
		job := fx.Job(nil)
		run, _, err := b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: fx.Name, Nominal: tick, Fence: 1, Shards: fanin.Shards(len(jobspec.ItemNames(job))), Now: now})
		require.NoError(t, err)
		_, err = b.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(job.Assets), Done: true, Now: now})
		require.NoError(t, err)
		sent := &sentMessages{}
		cons := &consumer.Consumer{Ledger: b.Ledger, Queue: sent, Jobs: baton.MustCatalog(job), Effects: b.Effects, Owner: fmt.Sprintf("storm-%d", round)}
		n := 0
		for _, a := range job.Assets {
			body := message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false).Encode()
			var batch []queue.Delivery
			for range 3 {
				n++
				id := fmt.Sprintf("m%d", n)
				batch = append(batch, queue.Delivery{MessageID: id, ReceiptHandle: id, Body: body, ReceiveCount: 1, SentAt: now})
			}
			for j := 0; len(batch) > 0; j++ {
				require.Less(t, j, 50, "the storm does not drain")
				out := cons.Handle(ctx, time.Time{}, batch)
				failed := map[string]bool{}
				for _, f := range out.Failed {
					failed[f.MessageID] = true
				}
				var again []queue.Delivery
				for _, d := range batch {
					if failed[d.MessageID] {
						d.ReceiveCount++
						again = append(again, d)
					}
				}
				batch = again
			}
		}
		derived := 0
		for _, m := range sent.msgs {
			if strings.Contains(string(m.Body), `"derived":true`) {
				derived++
			}
		}
		require.GreaterOrEqual(t, derived, 1, "round %d: DXY was enqueued", round)
		require.LessOrEqual(t, derived, 2, "round %d: DXY enqueued %d times for one run", round, derived)
	}
}
