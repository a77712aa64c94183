// This file holds the Bulk group: bulk jobs (baton.Job.Bulk), whose
// shard messages the consumers run in place, item by item.
package jobmodeltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// countingQueue counts the messages sent to a work queue by kind.
type countingQueue struct {
	backend.Queue
	items, shards atomic.Int64
	mu            sync.Mutex
	handedOver    []string // the assets of the item messages sent
}

func (q *countingQueue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	err := q.Queue.SendBatch(ctx, msgs)
	var be *queue.BatchError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	failed := map[string]bool{}
	if be != nil {
		for _, e := range be.Failed {
			failed[e.ID] = true
		}
	}
	for _, m := range msgs {
		msg, derr := message.Decode(m.Body)
		if derr != nil || failed[m.ID] {
			continue
		}
		if msg.IsShard() {
			q.shards.Add(1)
			continue
		}
		q.items.Add(1)
		if k, kerr := msg.ItemKey(); kerr == nil {
			q.mu.Lock()
			q.handedOver = append(q.handedOver, k.Asset)
			q.mu.Unlock()
		}
	}
	return err
}

// TestBulkShardsRunInPlace runs one tick of a bulk job (baton.Job.Bulk)
// of 300 assets: the coordinator sends three shard messages and the consumers run
// their items in place, so no item message is sent but the one of the
// item that fails its first attempt, which is handed over and retried on
// its own. Every item runs to its end once (twice for the failing one),
// with the fence of its shard, and the run settles complete.
func TestBulkShardsRunInPlace(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const n = 300
	assets := make([]string, n)
	for i := range assets {
		assets[i] = fmt.Sprintf("b-%04d", i)
	}
	flaky := assets[137]
	job := baton.Job{Name: "bulk", Schedule: "rate(1 hour)", Assets: assets}
	eng, work, calls := bulkEngine(t, h, b, job, flaky, func(task baton.Task) []byte { return []byte(task.Asset) })
	defer consume(t, eng)()
	sum, err := eng.Trigger(t.Context(), "bulk", h.now(), false)
	require.NoError(t, err)
	require.Equal(t, n, sum.Enqueued)
	require.Equal(t, 3, sum.ShardMessages, "a bulk job fans out in shard messages below the expansion threshold too")
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)

	require.Equal(t, int64(3), work.shards.Load())
	work.mu.Lock()
	require.Equal(t, []string{flaky}, work.handedOver, "the only item message is the failed item's hand-over")
	work.mu.Unlock()
	items, err := b.Ledger.ListItems(t.Context(), sum.Run)
	require.NoError(t, err)
	require.Len(t, items, n)
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		require.Equal(t, []byte(it.Key.Asset), it.Result)
		require.Equal(t, sum.Fence, it.Fence, "%s carries its shard's fence", it.Key.Asset)
		want := 1
		if it.Key.Asset == flaky {
			want = 2
		}
		require.Equal(t, want, calls.get(it.Key.Asset), it.Key.Asset)
	}
}

// TestBulkRunTimePagesRunInPlace runs one tick of a bulk job with a
// run-time list (baton.Job.Bulk with Items) of 300 items: the coordinator stores
// the list in five pages and sends one page shard message per page, the
// consumers run each page's items in place, and the only item message
// is the hand-over of the item that fails its first attempt (version 2,
// naming its page). Every item runs to its end once (twice for the
// failing one) with its payload and its shard's fence, and the run
// settles complete.
func TestBulkRunTimePagesRunInPlace(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const n = 300
	src := &Source{N: n, PageSize: 50}
	flaky := Name(201)
	job := baton.Job{Name: "bulkrt", Schedule: "rate(1 hour)", Items: src.Func}
	eng, work, calls := bulkEngine(t, h, b, job, flaky, func(task baton.Task) []byte { return task.Payload })
	defer consume(t, eng)()
	sum, err := eng.Trigger(t.Context(), "bulkrt", h.now(), false)
	require.NoError(t, err)
	pages := (n + ledger.PageItems - 1) / ledger.PageItems
	require.Equal(t, n, sum.Enqueued)
	require.Equal(t, pages, sum.ShardMessages, "a bulk run-time list fans out one page shard per stored page")
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)

	require.Equal(t, int64(pages), work.shards.Load())
	work.mu.Lock()
	require.Equal(t, []string{flaky}, work.handedOver, "the only item message is the failed item's hand-over")
	work.mu.Unlock()
	seen := 0
	for p := 0; p < pages; p++ {
		pg, err := b.Ledger.GetPage(t.Context(), sum.Run, p)
		require.NoError(t, err, "page %d", p)
		items, err := b.Ledger.ListItemRange(t.Context(), sum.Run, pg.Items[0].Name, pg.Items[len(pg.Items)-1].Name)
		require.NoError(t, err)
		require.Len(t, items, len(pg.Items), "page %d", p)
		for k, it := range items {
			i := seen + k
			require.Equal(t, Name(i), it.Key.Asset)
			require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
			require.Equal(t, Payload(i), it.Result, "%s got its payload", it.Key.Asset)
			require.Equal(t, sum.Fence, it.Fence, "%s carries its shard's fence", it.Key.Asset)
			want := 1
			if it.Key.Asset == flaky {
				want = 2
			}
			require.Equal(t, want, calls.get(it.Key.Asset), it.Key.Asset)
		}
		seen += len(items)
	}
	require.Equal(t, n, seen)
}

// bulkCalls counts a bulk job's processor calls per item.
type bulkCalls struct {
	mu sync.Mutex
	n  map[string]int
}

// get returns the calls of item so far.
func (c *bulkCalls) get(item string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[item]
}

// bulkEngine makes job a bulk job on b (Concurrency 8, short leases)
// whose processor counts its calls, fails flaky's first attempt and
// returns result(task) otherwise, with a work queue that counts the
// shard and item messages sent, and an engine of two consumers.
func bulkEngine(t *testing.T, h Harness, b backend.Backend, job baton.Job, flaky string, result func(baton.Task) []byte) (*exec.Runtime, *countingQueue, *bulkCalls) {
	t.Helper()
	calls := &bulkCalls{n: map[string]int{}}
	job.Bulk = true
	job.Limits = baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond, Concurrency: 8}
	job.Processor = baton.ProcessorFunc(func(_ context.Context, task baton.Task) ([]byte, error) {
		calls.mu.Lock()
		calls.n[task.Asset]++
		calls.mu.Unlock()
		if task.Asset == flaky && task.Attempt == 1 {
			return nil, errors.New("flaky upstream (on purpose)")
		}
		return result(task), nil
	})
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	work := &countingQueue{Queue: b.Work}
	b.Work = work
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 10, BatchTimeout: 2 * time.Minute, RetryDelay: 100 * time.Millisecond})
	return eng, work, calls
}
