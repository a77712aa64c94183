package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// finishItem drives an item to SUCCEEDED or DEAD through the ledger, as a
// consumer would.
func finishItem(t *testing.T, b *bundle, run ledger.RunID, asset string, state ledger.ItemState) {
	t.Helper()
	ctx := context.Background()
	key := ledger.ItemKey{Run: run, Asset: asset}
	now := b.clock.Now()
	it, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
	require.NoError(t, err)
	switch state {
	case ledger.ItemSucceeded:
		_, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "w", Attempt: it.Attempt, Result: []byte(`{}`), Now: now})
	case ledger.ItemDead:
		_, err = b.ledger.Fail(ctx, ledger.FailParams{Key: key, Owner: "w", Attempt: it.Attempt, Reason: "boom", Permanent: true, Now: now})
	default:
		t.Fatalf("finishItem: state %s", state)
	}
	require.NoError(t, err)
}

func fannedOut(t *testing.T, b *bundle) (*coordinator.Coordinator, ledger.RunID) {
	t.Helper()
	c := b.coordinator("c1")
	sum, err := c.Run(context.Background(), coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	return c, sum.Run
}

func TestSettleComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, run := fannedOut(t, b)

	for _, a := range fx.Assets {
		finishItem(t, b, run, a, ledger.ItemSucceeded)
	}
	got, err := c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, got.State, "DXY is still to come")

	finishItem(t, b, run, fx.DXY, ledger.ItemSucceeded)
	got, err = c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, got.State)
	require.Equal(t, 8, got.Succeeded)
	require.Zero(t, got.Dead+got.Cancelled)

	again, err := c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, got.State, again.State, "settling twice changes nothing")
}

func TestSettlePartialCancelsDoomedDerived(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, run := fannedOut(t, b)

	for _, a := range fx.Assets {
		state := ledger.ItemSucceeded
		if a == "USDJPY" {
			state = ledger.ItemDead
		}
		finishItem(t, b, run, a, state)
	}
	got, err := c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunPartial, got.State)
	require.Equal(t, 6, got.Succeeded)
	require.Equal(t, 1, got.Dead)
	require.Equal(t, 1, got.Cancelled)

	dxy, err := b.ledger.GetItem(ctx, ledger.ItemKey{Run: run, Asset: fx.DXY})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemCancelled, dxy.State)
	require.Equal(t, "input USDJPY is DEAD", dxy.Error)
}

func TestSettleLeavesUnfinishedRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := b.coordinator("c1")

	_, err := c.Settle(ctx, "fx", tick)
	require.ErrorIs(t, err, ledger.ErrNotFound)
	_, err = c.Settle(ctx, "nope", tick)
	require.ErrorIs(t, err, baton.ErrUnknownJob)

	// Fanning out: not settled even if its few items are done.
	run, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: tick, Fence: 1, Now: t0})
	require.NoError(t, err)
	finishItem(t, b, run.ID, "EURUSD", ledger.ItemSucceeded)
	got, err := c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, got.State)

	// Fanned out with an item in flight: not settled.
	_, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 7, Done: true, Now: t0})
	require.NoError(t, err)
	for _, a := range fx.Assets[1:6] {
		finishItem(t, b, run.ID, a, ledger.ItemSucceeded)
	}
	got, err = c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, got.State)
}

// Run settles the previous tick's run in passing.
func TestRunSettlesPreviousTick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, run := fannedOut(t, b)
	for _, a := range append(append([]string(nil), fx.Assets...), fx.DXY) {
		finishItem(t, b, run, a, ledger.ItemSucceeded)
	}
	b.clock.Advance(time.Minute)
	sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, tick.Add(time.Minute), sum.Nominal)
	prev, err := b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, prev.State)
}

// Settle re-enqueues a derived item whose inputs all succeeded but which
// never ran (every input's own fan-in check was lost).
func TestSettleReenqueuesLostDerived(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, run := fannedOut(t, b)
	for _, a := range fx.Assets {
		finishItem(t, b, run, a, ledger.ItemSucceeded)
	}
	require.Zero(t, b.queue.countByAsset(t)[fx.DXY])
	got, err := c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, got.State)
	require.Equal(t, 1, b.queue.countByAsset(t)[fx.DXY], "DXY enqueued by the settle")
}

// Each trigger settles the job's recent fanned-out runs, not only the
// previous tick's: a run whose last item finished late still settles.
func TestRunSettlesRecentRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, first := fannedOut(t, b)
	c := b.coordinator("c1")
	// Three ticks later the first run's items finish.
	for i := 1; i <= 3; i++ {
		b.clock.Set(t0.Add(time.Duration(i) * time.Minute))
		_, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
		require.NoError(t, err)
	}
	for _, a := range append(append([]string{}, fx.Assets...), fx.DXY) {
		finishItem(t, b, first, a, ledger.ItemSucceeded)
	}
	got, err := b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, got.State)

	b.clock.Set(t0.Add(4 * time.Minute))
	_, err = c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	got, err = b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, got.State, "settled four ticks later")
}

// A run fanned out 30 ticks ago, whose items all ended, settles at the
// next trigger: the coordinator pages back past any fixed window while it
// finds unfinished runs.
func TestRunSettlesOldRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := b.coordinator("c1")
	var runs []ledger.RunID
	for i := range 30 {
		b.clock.Set(t0.Add(time.Duration(i) * time.Minute))
		sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
		require.NoError(t, err)
		runs = append(runs, sum.Run)
	}
	for _, run := range runs {
		for _, a := range append(append([]string{}, fx.Assets...), fx.DXY) {
			finishItem(t, b, run, a, ledger.ItemSucceeded)
		}
	}
	b.clock.Set(t0.Add(30 * time.Minute))
	_, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	for _, run := range runs {
		got, err := b.ledger.GetRun(ctx, "fx", run.Nominal)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, got.State, run.String())
	}
}

// A run left fanning out (its coordinator stopped after opening it) is
// resumed by the next trigger of the job, whatever its tick.
func TestRunResumesEarlierRunsLeftFanningOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	l, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "crashed", TTL: time.Second, Now: t0})
	require.NoError(t, err)
	run, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: tick, Fence: l.Fence, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, run.State)

	b.clock.Set(t0.Add(3 * time.Minute))
	sum, err := b.coordinator("c1").Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	got, err := b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, got.State, "the earlier run was resumed")
	require.Equal(t, len(fx.Assets), got.Total)
	sent := map[ledger.ItemKey]bool{}
	for _, k := range b.queue.keys(t) {
		sent[k] = true
	}
	for _, a := range fx.Assets {
		key := ledger.ItemKey{Run: run.ID, Asset: a}
		require.True(t, sent[key], "%s was enqueued", key)
	}
}

// Catch-up: a trigger after a gap runs the job's missed ticks within its
// window, oldest first and bounded per trigger; with Skip it runs none.
func TestCatchUpRunsMissedTicks(t *testing.T) {
	t.Parallel()
	job := fx.Job(nil)
	job.CatchUp = baton.CatchUp{Window: 10 * time.Minute, MaxPerTrigger: 4}
	skipping := fx.Job(nil)
	skipping.Name = "fxskip"
	skipping.CatchUp = baton.CatchUp{Window: 10 * time.Minute, Skip: true}
	b := setup(t, job, skipping)
	ctx := context.Background()
	c := b.coordinator("c1")
	// The first runs catch nothing up.
	for _, job := range []string{"fx", "fxskip"} {
		_, err := c.Run(ctx, coordinator.Trigger{Job: job, At: t0})
		require.NoError(t, err)
	}
	b.clock.Set(t0.Add(30 * time.Minute))
	now := b.clock.Now()
	nominal := now.Truncate(time.Minute)

	_, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: now})
	require.NoError(t, err)
	runs, err := b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: "fx", Limit: 100})
	require.NoError(t, err)
	var got []time.Time
	for _, r := range runs {
		got = append(got, r.ID.Nominal)
		require.Equal(t, ledger.RunFannedOut, r.State, r.ID.String())
	}
	want := []time.Time{t0.Truncate(time.Minute), nominal}
	for i := 10; i > 6; i-- { // the four oldest ticks of the window
		want = append(want, nominal.Add(-time.Duration(i)*time.Minute))
	}
	require.ElementsMatch(t, want, got)

	// The next trigger catches up the next four.
	b.clock.Set(now.Add(time.Minute))
	_, err = c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	runs, err = b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: "fx", Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, 3+8)

	_, err = c.Run(ctx, coordinator.Trigger{Job: "fxskip", At: now})
	require.NoError(t, err)
	runs, err = b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: "fxskip", Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, 2, "skip runs no missed tick")
}

// The job's next trigger sends again an item of an earlier run left
// RUNNING under a claim over for an item lease (its messages lost to the
// queue's redrive), once per trigger; polling Settle sends nothing.
func TestTriggerResendsAnOrphanedItemOfAnEarlierRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, run := fannedOut(t, b)
	orphan := fx.Assets[0]
	for _, a := range fx.Assets[1:] {
		finishItem(t, b, run, a, ledger.ItemSucceeded)
	}
	now := b.clock.Now()
	_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run, Asset: orphan}, Owner: "dead", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
	require.NoError(t, err)
	before := b.queue.countByAsset(t)[orphan]

	b.clock.Set(now.Add(10 * time.Minute))
	_, err = c.Settle(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, before, b.queue.countByAsset(t)[orphan], "a poll of Settle sends nothing")

	sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	n := 0
	for _, k := range b.queue.keys(t) {
		if k.Run == run && k.Asset == orphan {
			n++
		}
	}
	require.Equal(t, before+1, n, "the next trigger sends the orphan of the earlier run again, once")
}
