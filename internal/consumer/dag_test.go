package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// A three-level graph of derived items under a delivery storm: every
// message, the fan-out's and those fan-in enqueues, is delivered three
// times at once, by two consumers. Each item is processed once, each
// derived item is enqueued at most twice per level it waits on, and the
// top receives its inputs' results.
func TestDerivedGraphUnderDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	led, effects := newStores(t)
	work := &memQueue{}
	var mu sync.Mutex
	calls := map[string]int{}
	job := baton.Job{
		Name: "dag", Schedule: "rate(1 minute)", Assets: []string{"a1", "a2", "a3"}, Derived: jobmodeltest.Derived,
		Processor: baton.ProcessorFunc(func(_ context.Context, tk baton.Task) ([]byte, error) {
			mu.Lock()
			calls[tk.Asset]++
			mu.Unlock()
			return fmt.Appendf(nil, "%s%d", tk.Asset, len(tk.Inputs)), nil
		}),
	}
	cat := baton.MustCatalog(job)
	ctx := context.Background()
	run, _, err := led.OpenRun(ctx, ledger.OpenRunParams{Job: "dag", Nominal: tick, Fence: 1, Now: tick})
	require.NoError(t, err)
	_, err = led.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 3, Done: true, Now: tick})
	require.NoError(t, err)
	consumers := make([]*consumer.Consumer, 2)
	for i := range consumers {
		consumers[i] = &consumer.Consumer{Ledger: led, Queue: work, Jobs: cat, Effects: effects,
			Owner: fmt.Sprintf("consumer-%d", i), NowFunc: func() time.Time { return t0 }}
	}

	var pending []queue.Message
	for _, a := range job.Assets {
		pending = append(pending, message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false).QueueMessage())
	}
	id := 0
	derivedSends := map[string]int{}
	for round := 0; len(pending) > 0; round++ {
		require.Less(t, round, 30, "the storm does not drain")
		// Three copies of each pending message, split over two consumers
		// handling their batches at once.
		var batches [2][]queue.Delivery
		for copyN := range 3 {
			for _, m := range pending {
				id++
				d := queue.Delivery{MessageID: fmt.Sprintf("m%d", id), ReceiptHandle: fmt.Sprintf("r%d", id), Body: m.Body, ReceiveCount: 1}
				batches[(id+copyN)%2] = append(batches[(id+copyN)%2], d)
			}
		}
		var wg sync.WaitGroup
		results := make([]consumer.Result, 2)
		for i := range consumers {
			wg.Go(func() { results[i] = consumers[i].Handle(ctx, time.Time{}, batches[i]) })
		}
		wg.Wait()
		// What comes back: failures (held, inputs not ready) once more,
		// and whatever fan-in enqueued.
		pending = nil
		seen := map[string]bool{}
		for i, res := range results {
			failed := map[string]bool{}
			for _, f := range res.Failed {
				failed[f.MessageID] = true
			}
			for _, d := range batches[i] {
				if failed[d.MessageID] && !seen[string(d.Body)] {
					seen[string(d.Body)] = true
					pending = append(pending, queue.Message{Body: d.Body})
				}
			}
		}
		for _, m := range work.take() {
			dm, err := message.Decode(m.Body)
			require.NoError(t, err)
			k, err := dm.ItemKey()
			require.NoError(t, err)
			derivedSends[k.Asset]++
			pending = append(pending, m)
		}
	}

	items, err := led.ListItems(ctx, run.ID)
	require.NoError(t, err)
	require.Len(t, items, 7)
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		require.Equal(t, 1, calls[it.Key.Asset], "%s processed once", it.Key.Asset)
	}
	for _, d := range jobmodeltest.Derived {
		require.Positive(t, derivedSends[d.Name], d.Name)
		require.LessOrEqual(t, derivedSends[d.Name], len(d.Inputs), "%s enqueued at most once per input completing it", d.Name)
	}
	top, err := led.GetItem(ctx, ledger.ItemKey{Run: run.ID, Asset: "top"})
	require.NoError(t, err)
	require.Equal(t, "top2", string(top.Result))
	finished, err := led.GetRun(ctx, "dag", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, finished.State, "settled by the consumer that ended the last item")
}
