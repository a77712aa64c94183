// This file holds the Chains group: a job's finish starting a run of
// another (baton.Chain), and a chained job summarising its parent's
// run-time list through the engine it runs on.
package jobmodeltest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// parentRecorder records each task's Parent by item key.
type parentRecorder struct {
	mu      sync.Mutex
	parents map[string]baton.RunID
	fail    string // an asset failed permanently
}

func (p *parentRecorder) Process(_ context.Context, t baton.Task) ([]byte, error) {
	p.mu.Lock()
	p.parents[t.Key.String()] = t.Parent
	p.mu.Unlock()
	if t.Asset == p.fail {
		return nil, baton.Permanent(errors.New("failed on purpose"))
	}
	return []byte("ok"), nil
}

// TestChain runs a tick of "up", whose finish starts a run of
// "down" (baton.Chain), and of "upfail", which ends partial: its chain to
// "downcomplete" (complete only) starts nothing, its chain to
// "downpartial" (OnPartial) starts a run. The chained runs carry their
// parent's id in Task.Parent, and settling the parents again (twice)
// starts nothing more: one chained run per parent run.
func TestChain(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	rec := &parentRecorder{parents: map[string]baton.RunID{}, fail: "f2"}
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	job := func(name string, assets []string, chains ...baton.Chain) baton.Job {
		return baton.Job{Name: name, Schedule: "rate(1 hour)", Assets: assets, Processor: rec, Limits: lim, Chains: chains}
	}
	cat, err := baton.NewCatalog(
		job("up", []string{"u1", "u2"}, baton.Chain{Job: "down"}),
		job("down", []string{"d1", "d2", "d3"}),
		job("upfail", []string{"f1", "f2"}, baton.Chain{Job: "downcomplete"}, baton.Chain{Job: "downpartial", OnPartial: true}),
		job("downcomplete", []string{"c1"}),
		job("downpartial", []string{"p1"}),
	)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	at := h.now()
	up, err := eng.Trigger(t.Context(), "up", at, false)
	require.NoError(t, err)
	upfail, err := eng.Trigger(t.Context(), "upfail", at, false)
	require.NoError(t, err)
	upRun := waitFinished(t, b.Ledger, up.Run)
	require.Equal(t, ledger.RunComplete, upRun.State)
	failRun := waitFinished(t, b.Ledger, upfail.Run)
	require.Equal(t, ledger.RunPartial, failRun.State)

	down := ledger.RunID{Job: "down", Submission: baton.ChainKey(up.Run), Generation: 1}
	downRun := waitFinished(t, b.Ledger, down)
	require.Equal(t, ledger.RunComplete, downRun.State)
	require.Equal(t, 3, downRun.Succeeded)
	partial := ledger.RunID{Job: "downpartial", Submission: baton.ChainKey(upfail.Run), Generation: 1}
	require.Equal(t, ledger.RunComplete, waitFinished(t, b.Ledger, partial).State)
	_, err = ledger.GetRunOf(t.Context(), b.Ledger, ledger.RunID{Job: "downcomplete", Submission: baton.ChainKey(upfail.Run), Generation: 1})
	require.ErrorIs(t, err, ledger.ErrNotFound, "a partial run starts no complete-only chain")

	// Settling the parents again starts nothing more.
	for range 2 {
		for _, r := range []ledger.Run{upRun, failRun} {
			require.NoError(t, eng.Coordinator.StartChains(t.Context(), r))
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, a := range []string{"d1", "d2", "d3"} {
		require.Equal(t, up.Run, rec.parents[ledger.ItemKey{Run: down, Asset: a}.String()], "%s carries its parent", a)
	}
	require.Equal(t, upfail.Run, rec.parents[ledger.ItemKey{Run: partial, Asset: "p1"}.String()])
	require.Equal(t, baton.RunID{}, rec.parents[ledger.ItemKey{Run: up.Run, Asset: "u1"}.String()], "a tick's run has no parent")
	chained := 0
	for k := range rec.parents {
		if strings.Contains(k, "+after-") {
			chained++
		}
	}
	require.Equal(t, 4, chained, "each chained item ran once: one run per chain and parent")
}

// TestSummaryOverRunTimeItems runs the fan-in over a run-time list: a tick of "feeds",
// whose 25 items are computed when the run opens, chains to "summary",
// whose one item reads every feed's result through Task.ParentResults (the
// engine the task runs on, no second client) and sums them. The summary
// sees all 25 results, in name order, and a run that does not exist is
// ErrNoRun.
func TestSummaryOverRunTimeItems(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const feeds = 25
	items := make([]baton.Item, feeds)
	want := 0
	for i := range items {
		items[i] = baton.Item{Name: fmt.Sprintf("feed-%02d", i), Payload: []byte(strconv.Itoa(i + 1))}
		want += i + 1
	}
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	fetch := baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
		return t.Payload, nil // the feed's "size"
	})
	summary := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		sum, n, last := 0, 0, ""
		for r, err := range t.ParentResults(ctx) {
			if err != nil {
				return nil, err
			}
			if r.State != "SUCCEEDED" || r.Item <= last {
				return nil, baton.Permanent(fmt.Errorf("result %s: state %s after %q", r.Item, r.State, last))
			}
			v, err := strconv.Atoi(string(r.Result))
			if err != nil {
				return nil, baton.Permanent(fmt.Errorf("result %s: %w", r.Item, err))
			}
			sum, n, last = sum+v, n+1, r.Item
		}
		missing := "read"
		for _, err := range t.Runs.Results(ctx, baton.RunID{Job: "feeds", Submission: "never", Generation: 1}) {
			if errors.Is(err, baton.ErrNoRun) {
				missing = "no such run"
			}
		}
		return fmt.Appendf(nil, "%d items, sum %d; a missing run: %s", n, sum, missing), nil
	})
	cat, err := baton.NewCatalog(
		baton.Job{Name: "feeds", Schedule: "rate(1 hour)", Items: baton.ItemList(10, items...), Processor: fetch, Limits: lim,
			Chains: []baton.Chain{{Job: "summary"}}},
		baton.Job{Name: "summary", Schedule: "rate(1 day)", Assets: []string{"total"}, Processor: summary, Limits: lim},
	)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	up, err := eng.Trigger(t.Context(), "feeds", h.now(), false)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, waitFinished(t, b.Ledger, up.Run).State)
	down := ledger.RunID{Job: "summary", Submission: baton.ChainKey(up.Run), Generation: 1}
	require.Equal(t, ledger.RunComplete, waitFinished(t, b.Ledger, down).State)
	total, err := b.Ledger.GetItem(t.Context(), ledger.ItemKey{Run: down, Asset: "total"})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d items, sum %d; a missing run: no such run", feeds, want), string(total.Result))
}
