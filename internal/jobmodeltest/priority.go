// This file holds the Priorities group: priority classes, each a job
// queue with its concurrency share, and one pool served highest Priority
// first where the engine has it (Capabilities.PriorityPool).
package jobmodeltest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
)

// ClassQueues are the job queues of the priority classes: an engine
// whose job queues are made beforehand (DynamoDB+SQS) makes them when
// Harness.OpenFunc is asked for them.
var ClassQueues = []string{"class-bulk", "class-urgent"}

// TestPriorityClasses runs two priority classes, each a job queue with its
// own concurrency share (baton.JobQueue: on AWS a queue and its
// event-source mapping's MaximumConcurrency, declared in the template; on
// the embedded store a pool of consumers per queue): "bulk" floods its
// class with 600 items while "urgent", in a class of 2 consumers of 8,
// has 60. Under the sustained high-volume load the low-volume class still
// progresses at its share: all its items end while the flood is still
// running, at a rate of at least half its share of the items finished
// meanwhile.
func TestPriorityClasses(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t, ClassQueues...)
	var mu sync.Mutex
	done := map[string][]time.Time{}
	proc := baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		time.Sleep(5 * time.Millisecond) // work, not a wait for time to pass
		mu.Lock()
		done[task.Key.Run.Job] = append(done[task.Key.Run.Job], time.Now())
		mu.Unlock()
		return nil, nil
	})
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	cat, err := baton.NewCatalog(
		baton.Job{Name: "bulk", Schedule: "rate(1 hour)", Assets: assetNames("b", 600), Processor: proc, Limits: lim,
			Queue: baton.JobQueue{Name: "class-bulk", MaxConcurrency: 6}},
		baton.Job{Name: "urgent", Schedule: "rate(1 hour)", Assets: assetNames("u", 60), Processor: proc, Limits: lim,
			Queue: baton.JobQueue{Name: "class-urgent", MaxConcurrency: 2}},
	)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 1, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	at := h.now()
	bulk, err := eng.Trigger(t.Context(), "bulk", at, false)
	require.NoError(t, err)
	urgent, err := eng.Trigger(t.Context(), "urgent", at, false)
	require.NoError(t, err)
	defer consume(t, eng)()
	u := waitFinished(t, b.Ledger, urgent.Run)
	require.Equal(t, 60, u.Succeeded)
	bk := waitFinished(t, b.Ledger, bulk.Run)
	require.Equal(t, 600, bk.Succeeded)

	mu.Lock()
	defer mu.Unlock()
	lastUrgent := slices.MaxFunc(done["urgent"], func(a, b time.Time) int { return a.Compare(b) })
	lastBulk := slices.MaxFunc(done["bulk"], func(a, b time.Time) int { return a.Compare(b) })
	require.True(t, lastUrgent.Before(lastBulk), "the urgent class ended while the flood still ran")
	bulkMeanwhile := 0
	for _, at := range done["bulk"] {
		if !at.After(lastUrgent) {
			bulkMeanwhile++
		}
	}
	share := 60.0 / float64(60+bulkMeanwhile)
	t.Logf("until the urgent class ended: 60 urgent and %d bulk items (urgent's share of the work: %.0f%%, of the consumers: 25%%)", bulkMeanwhile, share*100)
	require.GreaterOrEqual(t, share, 0.125, "the low-volume class got at least half its share")
}

// TestPriorityPool runs two classes with a Priority ("urgent", 6 of 8
// consumers, Priority 2; "bulk", 2 of 8, Priority 1): where empty
// receives are cheap (Capabilities.PriorityPool, which the backend's
// CheapProbes must match: the embedded store, PostgreSQL) they share one pool of 8, served highest Priority first.
// While urgent has no work, bulk's 160 items run on the whole pool (more
// than its own 2 batches at once); urgent's 10 items, arriving behind
// bulk's backlog, all end before bulk's. On SQS the classes are separate
// queues weighted by their concurrency, with no order between them: there
// bulk never runs more than its own 2 batches at once.
func TestPriorityPool(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t, ClassQueues...)
	require.Equal(t, h.Caps.PriorityPool, b.CheapProbes,
		"engine %s: the harness's PriorityPool and the backend's CheapProbes disagree on whether the classes share one pool", h.Engine)
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
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 1, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	at := h.now()
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
	if !h.Caps.PriorityPool {
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
