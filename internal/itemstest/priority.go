package itemstest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
)

// RunPriorityPool runs two classes with a Priority on b ("urgent", 6 of 8
// consumers, Priority 2; "bulk", 2 of 8, Priority 1): where empty
// receives are cheap (backend.Backend.CheapProbes: the embedded store,
// PostgreSQL) they share one pool of 8, served highest Priority first.
// While urgent has no work, bulk's 160 items run on the whole pool (more
// than its own 2 batches at once); urgent's 10 items, arriving behind
// bulk's backlog, all end before bulk's. On SQS the classes are separate
// queues weighted by their concurrency, with no order between them: there
// bulk never runs more than its own 2 batches at once.
func RunPriorityPool(t *testing.T, b backend.Backend) {
	t.Helper()
	var mu sync.Mutex
	inFlight, maxBulk := map[string]int{}, 0
	done := map[string]time.Time{}
	proc := baton.ProcessorFunc(func(_ context.Context, task baton.Task) ([]byte, error) {
		job := task.Key.Run.Job
		mu.Lock()
		inFlight[job]++
		if job == "bulk" && inFlight[job] > maxBulk {
			maxBulk = inFlight[job]
		}
		mu.Unlock()
		time.Sleep(40 * time.Millisecond) // work
		mu.Lock()
		inFlight[job]--
		done[job] = time.Now()
		mu.Unlock()
		return nil, nil
	})
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	cat, err := baton.NewCatalog(
		baton.Job{Name: "bulk", Schedule: "rate(1 hour)", Assets: assetNames("b", 160), Processor: proc, Limits: lim,
			Queue: baton.JobQueue{Name: "class-bulk", MaxConcurrency: 2, Priority: 1}},
		baton.Job{Name: "urgent", Schedule: "rate(1 hour)", Assets: assetNames("u", 10), Processor: proc, Limits: lim,
			Queue: baton.JobQueue{Name: "class-urgent", MaxConcurrency: 6, Priority: 2}},
	)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 1, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	at := time.Now()
	bulk, err := eng.Trigger(t.Context(), "bulk", at, false)
	require.NoError(t, err)
	defer consume(t, eng)()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return maxBulk > 0 }, 30*time.Second, 5*time.Millisecond)
	urgent, err := eng.Trigger(t.Context(), "urgent", at, false)
	require.NoError(t, err)
	require.Equal(t, 10, waitFinished(t, b.Ledger, urgent.Run).Succeeded)
	require.Equal(t, 160, waitFinished(t, b.Ledger, bulk.Run).Succeeded)

	mu.Lock()
	defer mu.Unlock()
	if !b.CheapProbes {
		require.LessOrEqual(t, maxBulk, 2*10, "bulk ran more than its own 2 batches at once on separate queues")
		return
	}
	require.Greater(t, maxBulk, 2*10, "bulk never ran more than its own 2 batches at once: the pool is not shared")
	require.True(t, done["urgent"].Before(done["bulk"]), "urgent, arriving behind bulk's backlog, ended after it")
}

// assetNames are n asset names: prefix and a three-digit index.
func assetNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}
