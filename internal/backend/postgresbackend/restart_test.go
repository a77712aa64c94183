package postgresbackend_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/queue"
)

// The server restarts (an immediate stop, two seconds down, a start on
// the same port) twice: once while items are being processed, once while
// the coordinator is triggered. Consumers, coordinator and the wait for
// the run ride both out: every item of both runs succeeds, the runs
// complete, nothing is dead-lettered, and no operator command is needed.
func TestServerRestartLosesNothing(t *testing.T) {
	t.Parallel()
	srv := pgtest.NewServer(t)
	dsn := srv.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn, RetryWindow: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })

	var processed atomic.Int64
	assets := make([]string, 40)
	for i := range assets {
		assets[i] = fmt.Sprintf("A%02d", i)
	}
	job := baton.Job{
		Name: "restart", Schedule: "rate(1 minute)", Assets: assets,
		Limits: baton.Limits{LeaseTTL: time.Minute, ClockSkew: time.Second, ItemLease: 20 * time.Second,
			MaxAttempts: 5, Concurrency: 4, DeadlineMargin: time.Second},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			time.Sleep(100 * time.Millisecond)
			processed.Add(1)
			return []byte(t.Asset), nil
		}),
	}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 2, BatchTimeout: 20 * time.Second, RetryDelay: 200 * time.Millisecond})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(cctx) })
	defer func() { stop(); wg.Wait() }()

	settled := func(t *testing.T, nominal time.Time) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		run, items, err := eng.WaitSettled(ctx, job.Name, nominal, 0)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State, "run %s", run.ID)
		require.Equal(t, len(assets), run.Succeeded)
		require.Len(t, items, len(assets))
		for _, it := range items {
			require.Equal(t, ledger.ItemSucceeded, it.State, "item %s: %s", it.Key, it.Error)
		}
	}

	// 1. Down while items are in flight, and while the run is waited on
	// (the previous tick's run).
	now := time.Now().UTC()
	sum, err := eng.Trigger(t.Context(), job.Name, now.Add(-time.Minute), false)
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	require.Eventually(t, func() bool { return processed.Load() >= 4 }, 30*time.Second, 5*time.Millisecond)
	require.Less(t, processed.Load(), int64(len(assets)), "the run finished before the restart: nothing was in flight")
	restarted := make(chan struct{})
	go func() { defer close(restarted); srv.Restart(t, 2*time.Second) }()
	settled(t, sum.Nominal)
	<-restarted

	// 2. Down when the coordinator is triggered (the current tick).
	srv.Crash(t)
	type trig struct {
		sum coordinator.Summary
		err error
	}
	res := make(chan trig, 1)
	go func() {
		s, err := eng.Trigger(t.Context(), job.Name, now, false)
		res <- trig{s, err}
	}()
	time.Sleep(2 * time.Second)
	srv.Start(t)
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, coordinator.OutcomeOpened, r.sum.Outcome)
	settled(t, r.sum.Nominal)

	dead := deadLettered(t, b)
	require.Zero(t, dead, "messages dead-lettered")
}

// deadLettered counts the messages in b's dead-letter queue.
func deadLettered(t *testing.T, b backend.Backend) int {
	t.Helper()
	c, ok := b.DeadLetter.(queue.Counter)
	require.True(t, ok, "the dead-letter queue counts its messages")
	d, err := c.Depth(t.Context())
	require.NoError(t, err)
	return d.Visible + d.InFlight
}
