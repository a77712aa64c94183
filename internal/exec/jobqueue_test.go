package exec

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// A noisy job on a queue of its own cannot starve the others: while every
// one of its consumers is stuck in a slow item, a quiet job on the shared
// queue still completes, and the noisy job never runs more batches at once
// than its queue's MaxConcurrency.
func TestJobQueueIsolatesANoisyJob(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var running, most atomic.Int32
	noisy := baton.Job{
		Name: "noisy", Schedule: "rate(1 minute)", Assets: []string{"a", "b", "c", "d", "e", "f"},
		Queue: baton.JobQueue{Name: "noisy", MaxConcurrency: 2},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			select {
			case <-release:
				return []byte("late"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
	}
	quiet := baton.Job{
		Name: "quiet", Schedule: "rate(1 minute)", Assets: []string{"x", "y"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("ok"), nil }),
	}
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	// One consumer on the shared queue: were the noisy job's items there,
	// its stuck batch would hold it.
	e, err := New(b, Options{Catalog: baton.MustCatalog(noisy, quiet), Consumers: 1, BatchSize: 1, BatchTimeout: time.Minute})
	require.NoError(t, err)
	require.Len(t, e.Pollers(), 2, "the shared queue's pollers and the noisy job's")

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(ctx) })
	defer func() { close(release); cancel(); wg.Wait() }()

	now := time.Now()
	_, err = e.Trigger(t.Context(), "noisy", now, false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return running.Load() == 2 }, 30*time.Second, 5*time.Millisecond,
		"the noisy job's two consumers are busy")

	sum, err := e.Trigger(t.Context(), "quiet", now, false)
	require.NoError(t, err)
	waitCtx, stop := context.WithTimeout(t.Context(), 30*time.Second)
	defer stop()
	run, _, err := e.WaitSettled(waitCtx, "quiet", sum.Nominal, 0)
	require.NoError(t, err, "the quiet job completes while the noisy one is stuck")
	require.Equal(t, ledger.RunComplete, run.State)
	require.EqualValues(t, 2, most.Load(), "the noisy job never ran more batches at once than its MaxConcurrency")

	// The noisy job's messages wait in its own queue, not the shared one.
	d, err := queueDepth(t, b.Work)
	require.NoError(t, err)
	require.Zero(t, d, "nothing of the noisy job in the shared queue")
}

func TestJobQueueRefusedWithoutTheAbility(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	b.JobQueueFunc = nil
	j := baton.Job{Name: "noisy", Schedule: "rate(1 minute)", Assets: []string{"a"}, Queue: baton.JobQueue{Name: "noisy"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	_, err = New(b, Options{Catalog: baton.MustCatalog(j)})
	require.ErrorContains(t, err, "has no job queues")
}

func queueDepth(t *testing.T, q any) (int, error) {
	t.Helper()
	d, err := queue.OpsOf(q.(queue.Receiver)).Depth(t.Context())
	return d.Total(), err
}

// A replayed item of a job with a queue of its own is sent to that queue,
// as the coordinator's messages are, not to the shared work queue.
func TestReplayItemGoesToTheJobsQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	own := baton.Job{
		Name: "own", Schedule: "rate(1 minute)", Assets: []string{"a", "b"},
		Queue:     baton.JobQueue{Name: "own"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("ok"), nil }),
	}
	b, err := sqlitebackend.Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	e, err := New(b, Options{Catalog: baton.MustCatalog(own)})
	require.NoError(t, err)
	q, err := b.JobQueueFunc(ctx, "own")
	require.NoError(t, err)
	now := time.Now()
	sum, err := e.Trigger(ctx, "own", now, false)
	require.NoError(t, err)
	// Take the tick's messages off the job's queue, unprocessed.
	for {
		ds, err := q.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Hour, Now: time.Now()})
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			require.NoError(t, q.Delete(ctx, d.ReceiptHandle))
		}
	}
	run := ledger.RunID{Job: "own", Nominal: sum.Nominal, Generation: 1}
	_, err = e.ReplayItem(ctx, run, "a", false)
	require.NoError(t, err)
	got, err := q.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Hour, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, got, 1, "the replayed item's message, on the job's queue")
	shared, err := b.Work.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Hour, Now: time.Now()})
	require.NoError(t, err)
	require.Empty(t, shared, "nothing on the shared work queue")
}
