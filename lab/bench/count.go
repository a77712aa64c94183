package bench

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// Counter counts the calls a backend receives, by operation.
type Counter interface {
	Snapshot() map[string]int // calls per operation since the last Reset
	Reset()
}

// Tally is a Counter for the port wrappers below. The zero value is
// ready; it may be used concurrently.
type Tally struct {
	mu sync.Mutex
	n  map[string]int
}

var _ Counter = (*Tally)(nil)

func (t *Tally) add(op string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[op]++
}

// Snapshot returns the calls per operation so far.
func (t *Tally) Snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.n)
}

// Reset forgets every count.
func (t *Tally) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n = nil
}

// Total is the sum of the counts in m.
func Total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// CountedLeases counts the calls to a lease.Store. On the SQLite store
// each call is one statement or one transaction on one record.
type CountedLeases struct {
	lease.Store
	Tally *Tally
}

func (c CountedLeases) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	c.Tally.add("lease.Acquire")
	return c.Store.Acquire(ctx, p)
}

func (c CountedLeases) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	c.Tally.add("lease.Renew")
	return c.Store.Renew(ctx, p)
}

func (c CountedLeases) Release(ctx context.Context, p lease.ReleaseParams) error {
	c.Tally.add("lease.Release")
	return c.Store.Release(ctx, p)
}

func (c CountedLeases) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	c.Tally.add("lease.Inspect")
	return c.Store.Inspect(ctx, job)
}

// CountedContention counts the calls to a lease store that counts its
// refused acquisitions (lease.ContentionCounter), the contention calls
// included.
type CountedContention struct {
	CountedLeases
	Counter lease.ContentionCounter
}

func (c CountedContention) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	c.Tally.add("contention.RecordContention")
	return c.Counter.RecordContention(ctx, job, holder, now, ttl)
}

func (c CountedContention) Contention(ctx context.Context, job string) (lease.Contention, error) {
	c.Tally.add("contention.Contention")
	return c.Counter.Contention(ctx, job)
}

// CountLeases returns s with its calls counted in tally: a CountedContention
// when s is a lease.ContentionCounter, so that the ability stays visible,
// else a CountedLeases.
func CountLeases(s lease.Store, tally *Tally) lease.Store {
	counted := CountedLeases{Store: s, Tally: tally}
	if counter, ok := s.(lease.ContentionCounter); ok {
		return CountedContention{CountedLeases: counted, Counter: counter}
	}
	return counted
}

// CountedLedger counts the calls to a ledger.Store.
type CountedLedger struct {
	ledger.Store
	Tally *Tally
}

// CountLedger returns s with its calls counted in tally: a
// CountedBatchLedger when s claims, completes and reads items in batches
// (ledger.BatchClaimer, ledger.BatchCompleter and ledger.RangesLister:
// PostgreSQL), so that the abilities stay visible, else a CountedLedger.
func CountLedger(s ledger.Store, tally *Tally) ledger.Store {
	counted := CountedLedger{Store: s, Tally: tally}
	bc, claims := s.(ledger.BatchClaimer)
	bd, completes := s.(ledger.BatchCompleter)
	rl, lists := s.(ledger.RangesLister)
	if claims && completes && lists {
		return CountedBatchLedger{CountedLedger: counted, claimer: bc, completer: bd, lister: rl}
	}
	return counted
}

// CountedBatchLedger is a CountedLedger with the batched abilities: one
// call counted per batch.
type CountedBatchLedger struct {
	CountedLedger
	claimer   ledger.BatchClaimer
	completer ledger.BatchCompleter
	lister    ledger.RangesLister
}

func (c CountedBatchLedger) ListItemRanges(ctx context.Context, run ledger.RunID, ranges []ledger.ItemRange) ([][]ledger.Item, error) {
	c.Tally.add("ledger.ListItemRanges")
	return c.lister.ListItemRanges(ctx, run, ranges)
}

func (c CountedBatchLedger) ClaimBatch(ctx context.Context, ps []ledger.ClaimParams) []ledger.Outcome {
	c.Tally.add("ledger.ClaimBatch")
	return c.claimer.ClaimBatch(ctx, ps)
}

func (c CountedBatchLedger) CompleteBatch(ctx context.Context, ps []ledger.CompleteParams) []ledger.Outcome {
	c.Tally.add("ledger.CompleteBatch")
	return c.completer.CompleteBatch(ctx, ps)
}

func (c CountedLedger) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	c.Tally.add("ledger.OpenRun")
	return c.Store.OpenRun(ctx, p)
}

func (c CountedLedger) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	c.Tally.add("ledger.AdvanceRun")
	return c.Store.AdvanceRun(ctx, p)
}

func (c CountedLedger) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	c.Tally.add("ledger.FinishRun")
	return c.Store.FinishRun(ctx, p)
}

func (c CountedLedger) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	c.Tally.add("ledger.GetRun")
	return c.Store.GetRun(ctx, job, nominal)
}

func (c CountedLedger) ListRuns(ctx context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	c.Tally.add("ledger.ListRuns")
	return c.Store.ListRuns(ctx, p)
}

func (c CountedLedger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	c.Tally.add("ledger.Claim")
	return c.Store.Claim(ctx, p)
}

func (c CountedLedger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	c.Tally.add("ledger.Complete")
	return c.Store.Complete(ctx, p)
}

func (c CountedLedger) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	c.Tally.add("ledger.Fail")
	return c.Store.Fail(ctx, p)
}

func (c CountedLedger) Release(ctx context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	c.Tally.add("ledger.Release")
	return c.Store.Release(ctx, p)
}

func (c CountedLedger) Extend(ctx context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	c.Tally.add("ledger.Extend")
	return c.Store.Extend(ctx, p)
}

func (c CountedLedger) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	c.Tally.add("ledger.Cancel")
	return c.Store.Cancel(ctx, p)
}

func (c CountedLedger) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	c.Tally.add("ledger.GetItem")
	return c.Store.GetItem(ctx, key)
}

func (c CountedLedger) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	c.Tally.add("ledger.ListItems")
	return c.Store.ListItems(ctx, run)
}

func (c CountedLedger) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	c.Tally.add("ledger.ListItemRange")
	return c.Store.ListItemRange(ctx, run, first, last)
}

func (c CountedLedger) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	c.Tally.add("ledger.MarkDone")
	return c.Store.MarkDone(ctx, p)
}

func (c CountedLedger) ListMarks(ctx context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	c.Tally.add("ledger.ListMarks")
	return c.Store.ListMarks(ctx, run, level, group)
}

func (c CountedLedger) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	c.Tally.add("ledger.PutPage")
	return c.Store.PutPage(ctx, p)
}

func (c CountedLedger) GetPage(ctx context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	c.Tally.add("ledger.GetPage")
	return c.Store.GetPage(ctx, run, index)
}

// Queue sends and receives; backend.Queue has the same methods.
type Queue interface {
	queue.Sender
	queue.Receiver
}

// CountedQueue counts the calls to a queue.
type CountedQueue struct {
	Queue
	Tally *Tally
}

func (c CountedQueue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	c.Tally.add("queue.SendBatch")
	return c.Queue.SendBatch(ctx, msgs)
}

func (c CountedQueue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	c.Tally.add("queue.Receive")
	return c.Queue.Receive(ctx, p)
}

func (c CountedQueue) Delete(ctx context.Context, receiptHandle string) error {
	c.Tally.add("queue.Delete")
	return c.Queue.Delete(ctx, receiptHandle)
}

func (c CountedQueue) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	c.Tally.add("queue.ChangeVisibility")
	return c.Queue.ChangeVisibility(ctx, p)
}

// DeleteBatch counts one call when the queue deletes in batches, and one
// Delete per handle when it does not.
func (c CountedQueue) DeleteBatch(ctx context.Context, handles []string) error {
	if bd, ok := c.Queue.(queue.BatchDeleter); ok {
		c.Tally.add("queue.DeleteBatch")
		return bd.DeleteBatch(ctx, handles)
	}
	return queue.DeleteAll(ctx, deleteOnly{c}, handles)
}

// MaxBatch is the queue's own batch limit (queue.BatchLimit), so that
// a queue taking large batches is seen to.
func (c CountedQueue) MaxBatchSize() int { return queue.BatchLimit(c.Queue) }

// deleteOnly hides a CountedQueue's DeleteBatch, so that queue.DeleteAll
// deletes one by one through the counted Delete.
type deleteOnly struct{ Queue }

// countedBackend returns b with its leases, ledger and queues counted on
// one new tally: what the SQL engines' call-count rows measure.
func countedBackend(b backend.Backend) (backend.Backend, *Tally) {
	tally := &Tally{}
	b.Leases = CountLeases(b.Leases, tally)
	b.Ledger = CountLedger(b.Ledger, tally)
	b.Work = CountedQueue{Queue: b.Work, Tally: tally}
	b.DeadLetter = CountedQueue{Queue: b.DeadLetter, Tally: tally}
	return b, tally
}
