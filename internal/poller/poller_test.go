package poller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// fakeQueue is a minimal in-memory receiver that records deletes and
// visibility changes; the real adapters run the queue conformance suite.
type fakeQueue struct {
	mu       sync.Mutex
	pending  []queue.Delivery
	deleted  []string
	retried  map[string]time.Duration
	receives int
	ctxCheck bool // Delete and Receive fail on a done context, as network calls would
	// hold, when set, keeps Receive waiting until it is closed (a long
	// poll); entered is closed when the first such Receive starts.
	hold, entered chan struct{}
	enter         sync.Once
}

func (q *fakeQueue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	if q.hold != nil {
		q.enter.Do(func() { close(q.entered) })
		<-q.hold
	}
	if q.ctxCheck && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.receives++
	n := min(p.Max, len(q.pending))
	out := q.pending[:n]
	q.pending = q.pending[n:]
	return out, nil
}

func (q *fakeQueue) Delete(ctx context.Context, h string) error {
	if q.ctxCheck && ctx.Err() != nil {
		return ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleted = append(q.deleted, h)
	return nil
}

func (q *fakeQueue) ChangeVisibility(_ context.Context, p queue.ChangeVisibilityParams) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.retried[p.ReceiptHandle] = p.Timeout
	return nil
}

func newFake(n int) *fakeQueue {
	q := &fakeQueue{retried: map[string]time.Duration{}}
	for i := range n {
		q.pending = append(q.pending, queue.Delivery{MessageID: fmt.Sprint("m", i), ReceiptHandle: fmt.Sprint("r", i)})
	}
	return q
}

func TestPollDeletesAllButFailed(t *testing.T) {
	t.Parallel()
	q := newFake(4)
	var gotDeadline time.Time
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	p := &Poller{Receiver: q, BatchSize: 3, Timeout: 10 * time.Second, RetryDelay: 2 * time.Second,
		NowFunc: func() time.Time { return now },
		HandleFunc: func(_ context.Context, deadline time.Time, msgs []queue.Delivery) []string {
			gotDeadline = deadline
			require.Len(t, msgs, 3)
			return []string{"m1"}
		}}
	n, err := p.Poll(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, []string{"r0", "r2"}, q.deleted)
	require.Equal(t, map[string]time.Duration{"r1": 2 * time.Second}, q.retried)
	require.Equal(t, now.Add(10*time.Second), gotDeadline)
}

func TestPollEmptyQueue(t *testing.T) {
	t.Parallel()
	q := newFake(0)
	p := &Poller{Receiver: q, HandleFunc: func(context.Context, time.Time, []queue.Delivery) []string {
		t.Fatal("handler called on an empty batch")
		return nil
	}}
	n, err := p.Poll(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestRunDrainsWithConcurrentWorkers(t *testing.T) {
	t.Parallel()
	q := newFake(25)
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(t.Context())
	p := &Poller{Receiver: q, Concurrency: 3, HandleFunc: func(_ context.Context, _ time.Time, msgs []queue.Delivery) []string {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			seen[m.MessageID]++
		}
		if len(seen) == 25 {
			cancel()
		}
		return nil
	}}
	require.NoError(t, p.Run(ctx))
	require.Len(t, seen, 25)
	for id, n := range seen {
		require.Equal(t, 1, n, id)
	}
	require.Len(t, q.deleted, 25)
}

func TestRunRequiresParts(t *testing.T) {
	t.Parallel()
	require.Error(t, (&Poller{}).Run(t.Context()))
}

// A handler that used its whole budget still gets its successes deleted.
func TestPollDeletesAfterHandlerDeadline(t *testing.T) {
	t.Parallel()
	q := newFake(2)
	p := &Poller{Receiver: q, Timeout: time.Millisecond, HandleFunc: func(ctx context.Context, _ time.Time, _ []queue.Delivery) []string {
		<-ctx.Done()
		return nil
	}}
	q.ctxCheck = true
	_, err := p.Poll(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"r0", "r1"}, q.deleted)
}

// batchQueue is a fakeQueue with DeleteBatch; handles in invalid or
// broken fail.
type batchQueue struct {
	*fakeQueue
	batches [][]string
	invalid map[string]bool
	broken  map[string]bool
}

func (q *batchQueue) DeleteBatch(_ context.Context, handles []string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.batches = append(q.batches, handles)
	var failed []queue.EntryError
	for _, h := range handles {
		switch {
		case q.invalid[h]:
			failed = append(failed, queue.EntryError{ID: h, Err: queue.ErrInvalidReceipt})
		case q.broken[h]:
			failed = append(failed, queue.EntryError{ID: h, Err: errBroken})
		default:
			q.deleted = append(q.deleted, h)
		}
	}
	if len(failed) > 0 {
		return &queue.BatchError{Failed: failed}
	}
	return nil
}

var errBroken = errors.New("broken")

// A receiver that deletes in batches gets one DeleteBatch per batch, and
// no Delete.
func TestPollDeletesInOneBatch(t *testing.T) {
	t.Parallel()
	q := &batchQueue{fakeQueue: newFake(10)}
	p := &Poller{Receiver: q, HandleFunc: func(context.Context, time.Time, []queue.Delivery) []string {
		return []string{"m3"}
	}}
	n, err := p.Poll(t.Context())
	require.NoError(t, err)
	require.Equal(t, 10, n)
	require.Equal(t, [][]string{{"r0", "r1", "r2", "r4", "r5", "r6", "r7", "r8", "r9"}}, q.batches)
	require.Len(t, q.deleted, 9)
}

// A handle gone stale in a batch delete is only logged; another failure
// of an entry is the poll's error, naming the message.
func TestPollBatchDeleteFailures(t *testing.T) {
	t.Parallel()
	q := &batchQueue{fakeQueue: newFake(3), invalid: map[string]bool{"r0": true}}
	p := &Poller{Receiver: q, HandleFunc: func(context.Context, time.Time, []queue.Delivery) []string { return nil }}
	_, err := p.Poll(t.Context())
	require.NoError(t, err, "a stale handle is not an error")
	require.Equal(t, []string{"r1", "r2"}, q.deleted)

	q = &batchQueue{fakeQueue: newFake(3), broken: map[string]bool{"r1": true}}
	p.Receiver = q
	_, err = p.Poll(t.Context())
	require.ErrorIs(t, err, errBroken)
	require.ErrorContains(t, err, "delete m1")
	require.Equal(t, []string{"r0", "r2"}, q.deleted)
}

// A long poll in flight when the poller is stopped is not abandoned: its
// messages would stay hidden on the server with nobody to handle them.
func TestRunFinishesTheReceiveInFlight(t *testing.T) {
	t.Parallel()
	q := newFake(2)
	q.ctxCheck, q.hold, q.entered = true, make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	var handled []string
	p := &Poller{Receiver: q, Wait: time.Second, HandleFunc: func(_ context.Context, _ time.Time, msgs []queue.Delivery) []string {
		for _, m := range msgs {
			handled = append(handled, m.MessageID)
		}
		return nil
	}}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	<-q.entered
	cancel()      // stopped while the receive waits
	close(q.hold) // the long poll returns messages after all
	require.NoError(t, <-done)
	require.Equal(t, []string{"m0", "m1"}, handled)
	require.Equal(t, []string{"r0", "r1"}, q.deleted)
}

// largeQueue is a batchQueue whose receives and batch deletes take up to
// most messages (queue.LargeBatches, as PostgreSQL's).
type largeQueue struct {
	*batchQueue
	most int
}

func (q *largeQueue) MaxBatchSize() int { return q.most }

// A receiver that takes large batches gets batches of BatchSize beyond
// queue.MaxBatch, up to its own limit, deleted in one call; any other
// receiver still gets at most queue.MaxBatch.
func TestPollLargeBatches(t *testing.T) {
	t.Parallel()
	q := &largeQueue{batchQueue: &batchQueue{fakeQueue: newFake(250)}, most: 100}
	var sizes []int
	p := &Poller{Receiver: q, BatchSize: 150, HandleFunc: func(_ context.Context, _ time.Time, msgs []queue.Delivery) []string {
		sizes = append(sizes, len(msgs))
		return nil
	}}
	n, err := p.Poll(t.Context())
	require.NoError(t, err)
	require.Equal(t, 100, n, "BatchSize above the receiver's limit: its limit")
	require.Len(t, q.batches, 1, "one delete call for the batch")
	require.Len(t, q.batches[0], 100)

	p.BatchSize = 40
	n, err = p.Poll(t.Context())
	require.NoError(t, err)
	require.Equal(t, 40, n)

	small := &batchQueue{fakeQueue: newFake(50)}
	p.Receiver = small
	n, err = p.Poll(t.Context())
	require.NoError(t, err)
	require.Equal(t, queue.MaxBatch, n, "a receiver without large batches: at most queue.MaxBatch")
	require.Equal(t, []int{100, 40, queue.MaxBatch}, sizes)
}
