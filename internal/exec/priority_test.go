package exec

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/ledger"
)

// priorityOrder runs a flood of high-class items queued with low-class
// items on the embedded store, the classes being job queues with a
// Priority (urgent: 2, MaxConcurrency 6; bulk: 1, MaxConcurrency 2, so a
// least share of 2/8), and returns the order in which items completed
// ("urgent" or "bulk" for each).
func priorityOrder(t testing.TB, high, low int) []string {
	var mu sync.Mutex
	var order []string
	job := func(name string, n, prio, conc int) baton.Job {
		assets := make([]string, n)
		for i := range assets {
			assets[i] = fmt.Sprintf("%s-%d", name, i)
		}
		return baton.Job{
			Name: name, Schedule: "rate(1 minute)", Assets: assets,
			Queue: baton.JobQueue{Name: name, MaxConcurrency: conc, Priority: prio},
			Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return []byte("ok"), nil
			}),
		}
	}
	b, err := sqlitebackend.Open(context.Background(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	e, err := New(b, Options{Catalog: baton.MustCatalog(job("urgent", high, 2, 6), job("bulk", low, 1, 2)), Consumers: 1, BatchSize: 10, BatchTimeout: time.Minute})
	require.NoError(t, err)
	require.Len(t, e.Pollers(), 2, "the shared queue's poller and the classes' one")

	// Both classes are queued before any consumer runs.
	now := time.Now()
	var nominal = map[string]time.Time{}
	for _, j := range []string{"urgent", "bulk"} {
		sum, err := e.Trigger(context.Background(), j, now, false)
		require.NoError(t, err)
		nominal[j] = sum.Nominal
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()
	for _, j := range []string{"urgent", "bulk"} {
		waitCtx, stop := context.WithTimeout(context.Background(), 60*time.Second)
		run, _, err := e.WaitSettled(waitCtx, j, nominal[j], 0)
		stop()
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), order...)
}

// lowShare is the bulk class's part of the completions while both classes
// still had items to complete.
func lowShare(order []string, high, low int) (float64, int, int) {
	var h, l int
	for _, c := range order {
		if h >= high || l >= low {
			break
		}
		if c == "urgent" {
			h++
		} else {
			l++
		}
	}
	return float64(l) / float64(h+l), h, l
}

// Under a flood of urgent items the bulk class still completes at least
// (loosely) its least share, 2/8, and no more than a little above it: the
// urgent class is served first with everything else.
func TestPriorityClassesOnTheEmbeddedStore(t *testing.T) {
	t.Parallel()
	const high, low, share = 400, 150, 0.25
	order := priorityOrder(t, high, low)
	got, h, l := lowShare(order, high, low)
	t.Logf("while both were backlogged: urgent %d, bulk %d completions (bulk %.3f, least share %.2f)", h, l, got, share)
	require.GreaterOrEqual(t, got, 0.8*share, "the bulk class progresses at its share")
	require.LessOrEqual(t, got, 0.45, "the urgent class is served first")
	require.Len(t, order, high+low)
}
