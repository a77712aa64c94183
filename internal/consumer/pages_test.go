package consumer_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// deliverTo hands msgs to c as one batch of first deliveries, m0, m1, ….
func deliverTo(ctx context.Context, c *consumer.Consumer, msgs ...queue.Message) consumer.Result {
	var ds []queue.Delivery
	for i, m := range msgs {
		ds = append(ds, queue.Delivery{MessageID: "m" + string(rune('0'+i)), Body: m.Body, Attributes: m.Attributes, ReceiveCount: 1})
	}
	return c.Handle(ctx, time.Time{}, ds)
}

// A job whose items are computed when its run opens: the consumer checks
// each message's item against the stored page its message names, with one
// read per page (PageCache), gives the processor the item's payload, and
// dead-letters with its reason, writing nothing, a message whose item the
// page does not hold, one naming no stored page and a version 1 message.
// The payload never appears in a reason.
func TestRunTimeItemsCheckedAgainstTheirPage(t *testing.T) {
	t.Parallel()
	led, effects := newStores(t)
	ctx := context.Background()
	var mu sync.Mutex // a batch's items run at once
	var got []string
	job := baton.Job{
		Name: "rt", Schedule: "rate(1 minute)", Items: baton.ItemList(10),
		Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, t.Asset+"="+string(t.Payload))
			return nil, nil
		}),
	}
	dlq := &memQueue{}
	pages := &consumer.PageCache{}
	c := &consumer.Consumer{Ledger: led, Queue: &memQueue{}, DeadLetter: dlq, Jobs: baton.MustCatalog(job), Effects: effects,
		Owner: "c1", NowFunc: func() time.Time { return tick.Add(time.Second) }, Pages: pages}
	run, _, err := led.OpenRun(ctx, ledger.OpenRunParams{Job: "rt", Nominal: tick, Fence: 1, Now: tick})
	require.NoError(t, err)
	_, err = led.PutPage(ctx, ledger.PutPageParams{Run: run.ID, Index: 0, Final: true, Now: tick, Items: []ledger.PageItem{
		{Name: "a", Payload: []byte("secret-a")}, {Name: "b", Payload: []byte("secret-b")},
	}})
	require.NoError(t, err)
	_, err = led.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 2, Done: true, Now: tick})
	require.NoError(t, err)
	key := func(a string) ledger.ItemKey { return ledger.ItemKey{Run: run.ID, Asset: a} }
	deliver := func(msgs ...queue.Message) consumer.Result { return deliverTo(ctx, c, msgs...) }

	res := deliver(message.NewPaged(key("a"), 1, 0).QueueMessage(), message.NewPaged(key("b"), 1, 0).QueueMessage())
	require.Empty(t, res.Failed)
	require.ElementsMatch(t, []string{"a=secret-a", "b=secret-b"}, got, "each item got its payload")
	require.Equal(t, int64(1), pages.Reads(), "one page read for both items")
	fin, err := led.GetRun(ctx, "rt", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, fin.State, "the last item's consumer settles the run from its page")

	for name, tc := range map[string]struct {
		msg  queue.Message
		want string
	}{
		"not on page": {message.NewPaged(key("c"), 1, 0).QueueMessage(), `the run's item list holds no item "c" on page 0`},
		"no page":     {message.NewPaged(key("a"), 1, 5).QueueMessage(), "page 5 of the run's item list is not stored"},
		"version 1":   {message.New(key("a"), 1, false).QueueMessage(), "names no page of it (version 1)"},
	} {
		before := len(dlq.all())
		res := deliver(tc.msg)
		require.Len(t, res.DeadLettered, 1, name)
		require.ErrorContains(t, res.DeadLettered[0].Err, tc.want, name)
		require.NotContains(t, res.DeadLettered[0].Err.Error(), "secret", name)
		require.Len(t, dlq.all(), before+1, name)
	}
	_, err = led.GetItem(ctx, key("c"))
	require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written for an item off the list")
}

// A page shard message (version 4) of a stored list expands into its
// page's item messages (version 2, naming the page, with its fence),
// read through the page cache that its items' messages then find; a
// bulk job runs the page's items in place instead. A page that is not
// stored is unvouched and one whose first item is not the message's is
// poison: both dead-lettered with the reason, nothing sent.
func TestPageShardExpandsItsPage(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{false, true} {
		name := "expanded"
		if bulk {
			name = "bulk"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			led, effects := newStores(t)
			ctx := context.Background()
			var mu sync.Mutex
			got := map[string]int{}
			job := baton.Job{
				Name: "rt", Schedule: "rate(1 minute)", Items: baton.ItemList(10), Bulk: bulk,
				Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
					mu.Lock()
					defer mu.Unlock()
					got[t.Asset+"="+string(t.Payload)]++
					return nil, nil
				}),
			}
			work, dlq, pages := &memQueue{}, &memQueue{}, &consumer.PageCache{}
			c := &consumer.Consumer{Ledger: led, Queue: work, DeadLetter: dlq, Jobs: baton.MustCatalog(job), Effects: effects,
				Owner: "c1", NowFunc: func() time.Time { return tick.Add(time.Second) }, Pages: pages}
			run, _, err := led.OpenRun(ctx, ledger.OpenRunParams{Job: "rt", Nominal: tick, Fence: 1, Now: tick})
			require.NoError(t, err)
			for p, names := range [][]string{{"a", "b"}, {"c", "d", "e"}} {
				var items []ledger.PageItem
				for _, n := range names {
					items = append(items, ledger.PageItem{Name: n, Payload: []byte("p-" + n)})
				}
				_, err = led.PutPage(ctx, ledger.PutPageParams{Run: run.ID, Index: p, Final: p == 1, Now: tick, Items: items})
				require.NoError(t, err)
			}
			_, err = led.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: ledger.PageItems + 3, Done: true, Now: tick})
			require.NoError(t, err)
			key := func(a string) ledger.ItemKey { return ledger.ItemKey{Run: run.ID, Asset: a} }
			deliver := func(msgs ...queue.Message) consumer.Result { return deliverTo(ctx, c, msgs...) }

			res := deliver(message.NewPageShard(key("c"), 1, 1).QueueMessage())
			require.Empty(t, res.Failed)
			require.Empty(t, res.DeadLettered)
			sent := work.take()
			if bulk {
				require.Equal(t, consumer.StatusRan, res.Items[0].Status)
				require.Empty(t, sent, "a bulk page shard runs its items here and sends nothing")
				require.Equal(t, map[string]int{"c=p-c": 1, "d=p-d": 1, "e=p-e": 1}, got)
			} else {
				require.Equal(t, consumer.StatusExpanded, res.Items[0].Status)
				require.Len(t, sent, 3)
				for i, m := range sent {
					msg, err := message.Decode(m.Body)
					require.NoError(t, err)
					require.Equal(t, message.NewPaged(key([]string{"c", "d", "e"}[i]), 1, 1), msg)
				}
				require.Empty(t, got, "an expansion runs nothing itself")
				res = deliver(sent...)
				require.Empty(t, res.Failed)
				require.Equal(t, map[string]int{"c=p-c": 1, "d=p-d": 1, "e=p-e": 1}, got)
			}
			require.Equal(t, int64(1), pages.Reads(), "the shard's page read serves its items too")

			for name, tc := range map[string]struct {
				msg  message.Message
				want string
			}{
				"page not stored": {message.NewPageShard(key("x"), 1, 7), "page 7 of the run's item list is not stored"},
				"not the first":   {message.NewPageShard(key("d"), 1, 1), `the page's first item is "c", not "d"`},
				"fence":           {message.NewPageShard(key("a"), 9, 0), "fence 9 is above any fence the run recorded"},
			} {
				res := deliver(tc.msg.QueueMessage())
				require.Len(t, res.DeadLettered, 1, name)
				require.ErrorContains(t, res.DeadLettered[0].Err, tc.want, name)
				require.Empty(t, work.take(), "%s: nothing sent", name)
			}
			require.Len(t, dlq.all(), 3)
			_, err = led.GetItem(ctx, key("a"))
			require.ErrorIs(t, err, ledger.ErrNotFound, "nothing ran for the refused shards")

			// A forced replay supersedes generation 1: its page shard still
			// queued is acknowledged, and every item of its page is
			// cancelled with the reason, as their own messages would be.
			gen2, _, err := led.OpenRun(ctx, ledger.OpenRunParams{Job: "rt", Nominal: tick, Fence: 2, Force: true, Now: tick})
			require.NoError(t, err)
			require.Equal(t, 2, gen2.ID.Generation)
			res = deliver(message.NewPageShard(key("a"), 1, 0).QueueMessage())
			require.Equal(t, consumer.StatusSuperseded, res.Items[0].Status)
			require.Empty(t, work.take(), "a superseded shard sends nothing")
			for _, a := range []string{"a", "b"} {
				it, err := led.GetItem(ctx, key(a))
				require.NoError(t, err, a)
				require.Equal(t, ledger.ItemCancelled, it.State, a)
				require.Equal(t, consumer.SupersededPrefix+gen2.ID.String(), it.Error, a)
			}
		})
	}
}

// cancelAfterCompletes cancels a context once n completions were written,
// as a batch that reaches its deadline right after its last item ends.
type cancelAfterCompletes struct {
	ledger.Store
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfterCompletes) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	it, err := c.Store.Complete(ctx, p)
	if err == nil && c.n.Add(-1) == 0 {
		c.cancel()
	}
	return it, err
}

// A batch whose context ends right after its items ended (a poller's
// batch context ends at its deadline) still settles them: the run
// finishes by its consumer, not at the job's next trigger.
func TestBatchPastItsContextStillSettles(t *testing.T) {
	t.Parallel()
	led, effects := newStores(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &cancelAfterCompletes{Store: led, cancel: cancel}
	l.n.Store(2)
	job := baton.Job{Name: "rt", Schedule: "rate(1 minute)", Items: baton.ItemList(10),
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	c := &consumer.Consumer{Ledger: l, Queue: &memQueue{}, Jobs: baton.MustCatalog(job), Effects: effects,
		Owner: "c1", NowFunc: func() time.Time { return tick.Add(time.Second) }, Pages: &consumer.PageCache{}}
	run, _, err := led.OpenRun(context.Background(), ledger.OpenRunParams{Job: "rt", Nominal: tick, Fence: 1, Now: tick})
	require.NoError(t, err)
	_, err = led.PutPage(context.Background(), ledger.PutPageParams{Run: run.ID, Index: 0, Final: true, Now: tick,
		Items: []ledger.PageItem{{Name: "a"}, {Name: "b"}}})
	require.NoError(t, err)
	_, err = led.AdvanceRun(context.Background(), ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 2, Done: true, Now: tick})
	require.NoError(t, err)
	key := func(a string) ledger.ItemKey { return ledger.ItemKey{Run: run.ID, Asset: a} }

	res := deliverTo(ctx, c, message.NewPaged(key("a"), 1, 0).QueueMessage(), message.NewPaged(key("b"), 1, 0).QueueMessage())
	require.Empty(t, res.Failed)
	require.Error(t, ctx.Err(), "the batch's context ended with its last completion")
	fin, err := led.GetRun(context.Background(), "rt", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, fin.State, "the batch settled its items past its context")
}
