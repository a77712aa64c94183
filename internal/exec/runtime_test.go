package exec

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

func openTestEngine(t *testing.T, latency time.Duration, consumers int) *Runtime {
	t.Helper()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	e, err := New(b, Options{
		Catalog:   fx.Catalog(&fx.Options{Latency: latency}),
		Consumers: consumers, BatchSize: 2,
	})
	require.NoError(t, err)
	return e
}

func TestTickSettlesEndToEnd(t *testing.T) {
	t.Parallel()
	e := openTestEngine(t, time.Millisecond, 2)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	sum, err := e.Trigger(t.Context(), "fx", time.Now(), false)
	require.NoError(t, err)
	require.Equal(t, 7, sum.Enqueued)
	waitCtx, stop := context.WithTimeout(t.Context(), time.Minute)
	defer stop()
	run, items, err := e.WaitSettled(waitCtx, "fx", sum.Nominal, 0)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Len(t, items, len(jobspec.ItemNames(fx.Job(nil))))
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.String())
		require.Equal(t, 1, it.Attempt, it.Key.String())
	}
}

// On shutdown no new batch starts, batches in flight finish, and nothing is
// left RUNNING for a full item lease.
func TestConsumeShutdownLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	e := openTestEngine(t, 400*time.Millisecond, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Consume(ctx) }()

	sum, err := e.Trigger(t.Context(), "fx", time.Now(), false)
	require.NoError(t, err)
	runID := ledger.RunID{Job: "fx", Nominal: sum.Nominal, Generation: 1}
	require.Eventually(t, func() bool {
		items, err := e.Backend().Ledger.ListItems(t.Context(), runID)
		require.NoError(t, err)
		for _, it := range items {
			if it.State == ledger.ItemRunning {
				return true
			}
		}
		return false
	}, 30*time.Second, 5*time.Millisecond, "no item started")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Consume did not return after cancel")
	}
	items, err := e.Backend().Ledger.ListItems(t.Context(), runID)
	require.NoError(t, err)
	require.NotEmpty(t, items)
	succeeded := 0
	for _, it := range items {
		require.NotEqual(t, ledger.ItemRunning, it.State, "%s left RUNNING after shutdown", it.Key)
		if it.State == ledger.ItemSucceeded {
			succeeded++
		}
	}
	require.Positive(t, succeeded, "the batch in flight finished")
	require.Less(t, succeeded, 7, "shutdown happened mid-tick")

	// The rest is still queued: a new consumer finishes the tick.
	ctx2, cancel2 := context.WithCancel(t.Context())
	go func() { done <- e.Consume(ctx2) }()
	defer func() { cancel2(); <-done }()
	waitCtx, stop := context.WithTimeout(t.Context(), time.Minute)
	defer stop()
	run, _, err := e.WaitSettled(waitCtx, "fx", sum.Nominal, 0)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
}

func TestNewRejectsBadCatalog(t *testing.T) {
	t.Parallel()
	_, err := New(backend.Backend{}, Options{})
	require.ErrorContains(t, err, "no job catalog")
}
