// This file holds the DAG group: jobs whose derived items form a graph
// of several levels. Every level runs once its inputs succeeded, with
// their results, and an input that ends DEAD cancels every item
// downstream of it; a run larger than a shard settles by its consumers
// alone, and a graph lives beside a run-time list.
package jobmodeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// Derived is the graph: x and y on assets, z on x and y, top on z and an
// asset. Listed top first: the order of the list does not matter.
var Derived = []baton.Derived{
	{Name: "top", Inputs: []string{"z", "a1"}},
	{Name: "z", Inputs: []string{"x", "y"}},
	{Name: "x", Inputs: []string{"a1", "a2"}},
	{Name: "y", Inputs: []string{"a3"}},
}

// counter counts processor calls per item key.
type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[key]++
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[key]
}

// dagProcessor returns an asset's name as its result, and a derived item's
// name with its inputs' results: "z(x(a1+a2)+y(a3))". It fails the asset
// named failAsset permanently.
func dagProcessor(c *counter, failAsset string) baton.Processor {
	return baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		c.add(t.Key.String())
		if t.Asset == failAsset {
			return nil, baton.Permanent(errors.New("refused on purpose"))
		}
		if len(t.Inputs) == 0 {
			return []byte(t.Asset), nil
		}
		names := make([]string, 0, len(t.Inputs))
		for n := range t.Inputs {
			names = append(names, n)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = string(t.Inputs[n])
		}
		return []byte(t.Asset + "(" + strings.Join(parts, "+") + ")"), nil
	})
}

func dagJob(name, failAsset string, c *counter) baton.Job {
	return baton.Job{
		Name: name, Schedule: "rate(1 minute)", Assets: []string{"a1", "a2", "a3"},
		Derived: Derived, Processor: dagProcessor(c, failAsset),
		Limits: baton.Limits{ItemLease: 5 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
}

// TestTwoLevelDAG triggers a tick of two jobs with the graph and waits for both
// runs to settle by themselves (no settle from the test): "dag", where
// everything succeeds, and "dagdead", whose asset a3 ends DEAD. It checks
// every item's state, result or reason, and that each item ran once.
func TestTwoLevelDAG(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	c := &counter{calls: map[string]int{}}
	cat, err := baton.NewCatalog(dagJob("dag", "", c), dagJob("dagdead", "a3", c))
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 4, BatchTimeout: 10 * time.Second, RetryDelay: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	at := h.now()
	okRun := trigger(t, eng, "dag", at)
	deadRun := trigger(t, eng, "dagdead", at)

	run, items := waitFinishedItems(t, b.Ledger, okRun)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 7, run.Succeeded)
	want := map[string]string{
		"a1": "a1", "a2": "a2", "a3": "a3", "x": "x(a1+a2)", "y": "y(a3)",
		"z": "z(x(a1+a2)+y(a3))", "top": "top(a1+z(x(a1+a2)+y(a3)))",
	}
	require.Len(t, items, len(want))
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		require.Equal(t, want[it.Key.Asset], string(it.Result), it.Key.Asset)
		require.Equal(t, 1, c.get(it.Key.String()), "%s processed once", it.Key)
	}

	run, items = waitFinishedItems(t, b.Ledger, deadRun)
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, [3]int{3, 1, 3}, [3]int{run.Succeeded, run.Dead, run.Cancelled}, "succeeded, dead, cancelled")
	wantState := map[string]ledger.ItemState{
		"a1": ledger.ItemSucceeded, "a2": ledger.ItemSucceeded, "x": ledger.ItemSucceeded, "a3": ledger.ItemDead,
		"y": ledger.ItemCancelled, "z": ledger.ItemCancelled, "top": ledger.ItemCancelled,
	}
	wantReason := map[string]string{"y": "input a3 is DEAD", "z": "input y is CANCELLED", "top": "input z is CANCELLED"}
	require.Len(t, items, len(wantState))
	for _, it := range items {
		require.Equal(t, wantState[it.Key.Asset], it.State, it.Key.Asset)
		if r, ok := wantReason[it.Key.Asset]; ok {
			require.Equal(t, r, it.Error, it.Key.Asset)
			require.Zero(t, c.get(it.Key.String()), "%s never processed", it.Key)
		}
	}
}

func trigger(t *testing.T, eng *exec.Runtime, job string, at time.Time) ledger.RunID {
	t.Helper()
	sum, err := eng.Trigger(t.Context(), job, at, false)
	require.NoError(t, err)
	require.Equal(t, 3, sum.Enqueued, "the assets are sent; derived items wait for fan-in")
	return ledger.RunID{Job: job, Nominal: sum.Nominal, Generation: 1}
}

// LargeAssets is the number of assets of RunLarge's jobs: more than a
// shard (fanin.ShardItems), so that their runs spread over several.
const LargeAssets = 300

// largeJob is a job of LargeAssets assets and derived items on either end
// of the asset names and on both.
func largeJob(name, failAsset string, c *counter) baton.Job {
	assets := make([]string, LargeAssets)
	for i := range assets {
		assets[i] = fmt.Sprintf("L%03d", i)
	}
	return baton.Job{
		Name: name, Schedule: "rate(1 minute)", Assets: assets,
		Derived: []baton.Derived{
			{Name: "first", Inputs: []string{"L000", "L001"}},
			{Name: "last", Inputs: []string{"L298", "L299"}},
			{Name: "both", Inputs: []string{"first", "last"}},
		},
		Processor: dagProcessor(c, failAsset),
		Limits:    baton.Limits{ItemLease: 5 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
}

// TestLargeRunSettlesByConsumers triggers one tick of two jobs of
// LargeAssets assets and three derived items and waits for both runs to settle by themselves,
// with no coordinator invocation after the fan-out (invariant 11 at any
// size): "large", where everything succeeds, and "largedead", whose asset
// L299 ends DEAD and so cancels "last" and "both".
func TestLargeRunSettlesByConsumers(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	c := &counter{calls: map[string]int{}}
	cat, err := baton.NewCatalog(largeJob("large", "", c), largeJob("largedead", "L299", c))
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 10 * time.Second, RetryDelay: 100 * time.Millisecond})

	at := h.now()
	var ids []ledger.RunID
	for _, job := range []string{"large", "largedead"} {
		sum, err := eng.Trigger(t.Context(), job, at, false)
		require.NoError(t, err)
		require.Equal(t, LargeAssets, sum.Enqueued)
		ids = append(ids, ledger.RunID{Job: job, Nominal: sum.Nominal, Generation: 1})
		run, err := b.Ledger.GetRun(t.Context(), job, sum.Nominal)
		require.NoError(t, err)
		require.Equal(t, ledger.RunFannedOut, run.State, "nothing ran before the consumers start")
		require.Greater(t, run.Shards, 1, "the run spreads over shards")
	}
	// Consumers start after the fan-out: whatever settles the runs is
	// theirs.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	run, items := waitFinishedItems(t, b.Ledger, ids[0])
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, LargeAssets+3, run.Succeeded)
	require.Len(t, items, LargeAssets+3)
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		require.Equal(t, 1, c.get(it.Key.String()), "%s processed once", it.Key)
	}
	require.Equal(t, "both(first(L000+L001)+last(L298+L299))", string(resultOf(items, "both")))

	run, items = waitFinishedItems(t, b.Ledger, ids[1])
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, [3]int{LargeAssets, 1, 2}, [3]int{run.Succeeded, run.Dead, run.Cancelled}, "succeeded, dead, cancelled")
	require.Len(t, items, LargeAssets+3)
}

func resultOf(items []ledger.Item, asset string) []byte {
	for _, it := range items {
		if it.Key.Asset == asset {
			return it.Result
		}
	}
	return nil
}

// TestRunTimeListBesideDAG runs, in one catalog and one engine, the
// graph's job "dag" and a job "listed" whose RunTimeItems items are computed when
// its run opens (baton.Job.Items): one tick of each, consumed by the same
// consumers, and both settle complete by themselves with every item run
// once. A job with Items has no derived items of its own (see
// baton.Job.Items for why); the two kinds of job live side by side.
func TestRunTimeListBesideDAG(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	n := RunTimeItems
	c := &counter{calls: map[string]int{}}
	src := &Source{N: n, PageSize: 97}
	listed := baton.Job{
		Name: "listed", Schedule: "rate(1 minute)", Items: src.Func,
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			c.add(t.Key.String())
			return t.Payload, nil
		}),
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
	cat, err := baton.NewCatalog(dagJob("dag", "", c), listed)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 10 * time.Second, RetryDelay: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	at := h.now()
	graph := trigger(t, eng, "dag", at)
	sum, err := eng.Trigger(t.Context(), "listed", at, false)
	require.NoError(t, err)
	require.Equal(t, n, sum.Enqueued)

	run, items := waitFinishedItems(t, b.Ledger, graph)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 7, run.Succeeded, "three assets and four derived items on two levels and more")
	for _, it := range items {
		require.Equal(t, 1, c.get(it.Key.String()), "%s processed once", it.Key)
	}
	run, _ = waitFinishedItems(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)
	for i := range n {
		key := ledger.ItemKey{Run: sum.Run, Asset: Name(i)}
		require.Equal(t, 1, c.get(key.String()), "%s processed once", key)
	}
}
