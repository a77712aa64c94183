package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

func TestRunFansOutOneMessagePerAsset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sum, err := b.coordinator("c1").Run(context.Background(), coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	require.Equal(t, tick, sum.Nominal)
	require.Equal(t, ledger.RunID{Job: "fx", Nominal: tick, Generation: 1}, sum.Run)
	require.Equal(t, 7, sum.Enqueued)
	require.Equal(t, 7, sum.Cursor)
	require.Equal(t, 7, sum.Total)
	require.Empty(t, sum.Stopped)
	require.Positive(t, sum.Fence)

	var assets []string
	for _, k := range b.queue.keys(t) {
		require.Equal(t, sum.Run, k.Run)
		assets = append(assets, k.Asset)
	}
	require.ElementsMatch(t, fx.Assets, assets, "one message per catalog asset, none for DXY")

	run, err := b.ledger.GetRun(context.Background(), "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	require.Equal(t, 7, run.Total)

	l, err := b.leases.Inspect(context.Background(), "fx")
	require.NoError(t, err)
	require.Empty(t, l.Owner, "the lease is released after the run")
	require.Equal(t, sum.Fence, l.Fence)
}

func TestRunRejectsBadTriggers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.coordinator("c1")
	ctx := context.Background()

	_, err := c.Run(ctx, coordinator.Trigger{Job: "nope", At: t0})
	require.ErrorIs(t, err, baton.ErrUnknownJob)
	require.ErrorContains(t, err, `"nope"`)

	_, err = c.Run(ctx, coordinator.Trigger{Job: "fx"})
	require.ErrorContains(t, err, "no time")

	_, err = c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0, Deadline: t0.Add(time.Second)})
	require.ErrorIs(t, err, coordinator.ErrNoTime, "1s left is inside the 2s margin")

	_, err = (&coordinator.Coordinator{Leases: b.leases, Ledger: b.ledger, Queue: b.queue, Jobs: b.jobs, NowFunc: b.clock.Now}).
		Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.ErrorContains(t, err, "owner")

	require.Empty(t, b.queue.keys(t))
	_, err = b.leases.Inspect(ctx, "fx")
	require.ErrorIs(t, err, lease.ErrNotFound, "no lease is taken for a bad trigger")
}

// Invariant 2: any number of concurrent triggers for one tick open one run.
func TestConcurrentTriggersOpenOneRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 10
	sums := make([]coordinator.Summary, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Triggers for the same tick arrive at different instants.
			at := t0.Add(time.Duration(i) * time.Second)
			sums[i], errs[i] = b.coordinator(fmt.Sprintf("c%d", i)).Run(context.Background(), coordinator.Trigger{Job: "fx", At: at})
		})
	}
	wg.Wait()

	outcomes := map[coordinator.RunOutcome]int{}
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, tick, sums[i].Nominal)
		outcomes[sums[i].Outcome]++
		if sums[i].Outcome == coordinator.OutcomeSkipped {
			require.NotNil(t, sums[i].Holder)
			require.NotContains(t, sums[i].Holder.Owner, fmt.Sprintf("c%d#", i))
		}
	}
	require.Equal(t, 1, outcomes[coordinator.OutcomeOpened], "outcomes: %v", outcomes)
	require.Equal(t, n-1, outcomes[coordinator.OutcomeSkipped]+outcomes[coordinator.OutcomeAlreadyFannedOut], "outcomes: %v", outcomes)
	require.Zero(t, outcomes[coordinator.OutcomeResumed])

	counts := b.queue.countByAsset(t)
	require.Len(t, counts, len(fx.Assets))
	for _, a := range fx.Assets {
		require.Equal(t, 1, counts[a], "messages for %s", a)
	}
	for _, k := range b.queue.keys(t) {
		require.Equal(t, 1, k.Run.Generation)
	}
}

// One Coordinator value (one Owner) running triggers concurrently: each
// invocation is its own lease holder, so they still exclude each other.
func TestConcurrentRunsOfOneCoordinatorExcludeEachOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 5
	// The holder is kept inside its fan-out until the others have been
	// skipped (or, if they are not, for a while: then the test fails).
	skipped := make(chan struct{}, n)
	release := make(chan struct{})
	b.queue.BeforeFunc = func([]queue.Message) error { <-release; return nil }
	c := b.coordinator("shared")
	c.NowFunc = nil // real time: the lease must stay live while the others try

	sums := make([]coordinator.Summary, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sums[i], errs[i] = c.Run(context.Background(), coordinator.Trigger{Job: "fx", At: t0})
			if sums[i].Outcome == coordinator.OutcomeSkipped {
				skipped <- struct{}{}
			}
		})
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
wait:
	for range n - 1 {
		select {
		case <-skipped:
		case <-timeout.C:
			break wait
		}
	}
	close(release)
	wg.Wait()

	count := map[coordinator.RunOutcome]int{}
	for i := range n {
		require.NoError(t, errs[i])
		count[sums[i].Outcome]++
		if sums[i].Outcome == coordinator.OutcomeSkipped {
			require.Contains(t, sums[i].Holder.Owner, "shared#")
		}
	}
	require.Equal(t, map[coordinator.RunOutcome]int{coordinator.OutcomeOpened: 1, coordinator.OutcomeSkipped: n - 1}, count)
	require.Len(t, b.queue.keys(t), 7)
}

func TestContentionSkipsWithHolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "other", TTL: 2 * time.Minute, Now: t0})
	require.NoError(t, err)

	b.clock.Advance(30 * time.Second)
	sum, err := b.coordinator("c1").Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err, "contention is not an error")
	require.Equal(t, coordinator.OutcomeSkipped, sum.Outcome)
	require.NotNil(t, sum.Holder)
	require.Equal(t, "other", sum.Holder.Owner)
	require.True(t, sum.Holder.ExpiresAt.Equal(t0.Add(2*time.Minute)), "holder expiry %s", sum.Holder.ExpiresAt)
	require.Equal(t, other.Fence, sum.Holder.Fence)
	require.Zero(t, sum.Enqueued)
	require.Empty(t, b.queue.keys(t))
	_, err = b.ledger.GetRun(ctx, "fx", tick)
	require.ErrorIs(t, err, ledger.ErrNotFound, "a skipped invocation opens no run")

	require.True(t, sum.Pending, "the tick has no run yet: the trigger must be retried")
	l, err := b.leases.Inspect(ctx, "fx")
	require.NoError(t, err)
	require.Equal(t, "other", l.Owner, "the holder's lease is untouched")

	// Once the tick is fanned out, a skip behind the lease is a duplicate.
	require.NoError(t, b.leases.Release(ctx, lease.ReleaseParams{Job: "fx", Owner: "other", Fence: other.Fence}))
	_, err = b.coordinator("c2").Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	_, err = b.leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "other", TTL: 2 * time.Minute, Now: b.clock.Now()})
	require.NoError(t, err)
	sum, err = b.coordinator("c1").Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeSkipped, sum.Outcome)
	require.False(t, sum.Pending, "the tick is fanned out")
}

// failingLeases fails Acquire with err.
type failingLeases struct {
	lease.Store
	err error
}

func (f failingLeases) Acquire(context.Context, lease.AcquireParams) (lease.Lease, error) {
	return lease.Lease{}, f.err
}

func TestLeaseStoreErrorIsNotASkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	boom := errors.New("connection reset")
	c := b.coordinator("c1")
	c.Leases = failingLeases{Store: b.leases, err: boom}
	sum, err := c.Run(context.Background(), coordinator.Trigger{Job: "fx", At: t0})
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, lease.ErrHeld)
	require.NotEqual(t, coordinator.OutcomeSkipped, sum.Outcome)
	require.Nil(t, sum.Holder)
	require.Empty(t, b.queue.keys(t))
}

// An expired lease is taken over at once (at expiry + skew), with a higher
// fence, and the crashed holder's run is resumed from its cursor.
func TestExpiredLeaseTakenOverAndRunResumed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	lim := fx.Job(nil).Limits

	// A coordinator took the lease, opened the run, sent 3 assets and crashed.
	crashed, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "crashed", TTL: lim.LeaseTTL, Now: t0, Skew: lim.ClockSkew})
	require.NoError(t, err)
	run, outcome, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: tick, Fence: crashed.Fence, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	_, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: crashed.Fence, Cursor: 3, Now: t0})
	require.NoError(t, err)

	c := b.coordinator("c2")
	expiry := t0.Add(lim.LeaseTTL + lim.ClockSkew)

	b.clock.Set(expiry.Add(-time.Millisecond))
	sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeSkipped, sum.Outcome, "live until expiry plus skew")

	b.clock.Set(expiry)
	sum, err = c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum.Outcome)
	require.Greater(t, sum.Fence, crashed.Fence)
	require.Equal(t, 4, sum.Enqueued, "the rest of the catalog, from the cursor")
	require.Equal(t, 7, sum.Cursor)

	var assets []string
	for _, k := range b.queue.keys(t) {
		assets = append(assets, k.Asset)
	}
	require.Equal(t, fx.Assets[3:], assets)

	got, err := b.ledger.GetRun(ctx, "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, got.State)
	require.Equal(t, sum.Fence, got.Fence)

	// The crashed holder can no longer release (its fence is stale).
	require.ErrorIs(t, b.leases.Release(ctx, lease.ReleaseParams{Job: "fx", Owner: "crashed", Fence: crashed.Fence}), lease.ErrNotHolder)
}

// A deadline mid fan-out leaves the run fanning out with its cursor; the
// next invocation sends the rest, and no asset is sent twice.
func TestDeadlineMidFanOutThenResume(t *testing.T) {
	t.Parallel()
	b := setup(t, bigJob("big", 250))
	ctx := context.Background()
	// Every batch takes a second.
	b.queue.BeforeFunc = func([]queue.Message) error { b.clock.Advance(time.Second); return nil }
	c := b.coordinator("c1")
	c.Checkpoint = 50 // 5 batches, 5 s per chunk

	// Deadline 12 s away, margin 2 s: two chunks fit (0 s, 5 s), the third
	// would start at 10 s.
	sum, err := c.Run(ctx, coordinator.Trigger{Job: "big", At: t0, Deadline: t0.Add(12 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	require.Equal(t, coordinator.StoppedDeadline, sum.Stopped)
	require.Equal(t, 100, sum.Enqueued)
	require.Equal(t, 100, sum.Cursor)
	require.Equal(t, 250, sum.Total)
	require.Equal(t, 10*time.Second, sum.Duration, "two chunks of five one-second batches")

	run, err := b.ledger.GetRun(ctx, "big", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, run.State)
	require.Equal(t, 100, run.Cursor)
	l, err := b.leases.Inspect(ctx, "big")
	require.NoError(t, err)
	require.Empty(t, l.Owner, "released at the stop")

	sum2, err := b.coordinator("c2").Run(ctx, coordinator.Trigger{Job: "big", At: t0.Add(20 * time.Second), Deadline: b.clock.Now().Add(10 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum2.Outcome)
	require.Empty(t, sum2.Stopped)
	require.Equal(t, 150, sum2.Enqueued)
	require.Equal(t, 250, sum2.Cursor)
	require.Greater(t, sum2.Fence, sum.Fence)

	counts := b.queue.countByAsset(t)
	require.Len(t, counts, 250)
	for a, n := range counts {
		require.Equal(t, 1, n, "asset %s", a)
	}
	run, err = b.ledger.GetRun(ctx, "big", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	require.Equal(t, 250, run.Total)
}

func TestBudgetStopsFanOut(t *testing.T) {
	t.Parallel()
	d := bigJob("big", 120)
	d.Limits.FanOutBudget = 3 * time.Second
	b := setup(t, d)
	ctx := context.Background()
	b.queue.BeforeFunc = func([]queue.Message) error { b.clock.Advance(time.Second); return nil }
	c := b.coordinator("c1")
	c.Checkpoint = 20 // 2 batches, 2 s per chunk: chunks start at 0 s and 2 s

	sum, err := c.Run(ctx, coordinator.Trigger{Job: "big", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.StoppedBudget, sum.Stopped)
	require.Equal(t, 40, sum.Cursor)

	for i := 0; sum.Cursor < 120; i++ {
		require.Less(t, i, 10, "fan-out does not progress")
		sum, err = c.Run(ctx, coordinator.Trigger{Job: "big", At: t0})
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomeResumed, sum.Outcome)
		require.Equal(t, 40, sum.Enqueued)
	}
	counts := b.queue.countByAsset(t)
	require.Len(t, counts, 120)
	for a, n := range counts {
		require.Equal(t, 1, n, "asset %s", a)
	}
}

// A coordinator that dies mid chunk (the queue fails under it) leaves a
// resumable run; the resumed fan-out re-sends at most the chunk that was in
// flight.
func TestSendFailureMidFanOutThenResume(t *testing.T) {
	t.Parallel()
	b := setup(t, bigJob("big", 95))
	ctx := context.Background()
	var mu sync.Mutex
	calls := 0
	b.queue.BeforeFunc = func(msgs []queue.Message) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls > 5 { // the 6th batch on fails: the queue is gone
			return errors.New("queue unavailable")
		}
		return nil
	}
	c := b.coordinator("c1")
	c.Checkpoint = 30

	sum, err := c.Run(ctx, coordinator.Trigger{Job: "big", At: t0})
	require.ErrorContains(t, err, "queue unavailable")
	require.Less(t, sum.Cursor, 95)
	run, err := b.ledger.GetRun(ctx, "big", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, run.State)
	require.Equal(t, sum.Cursor, run.Cursor, "the cursor is checkpointed up to what was accepted")
	l, err := b.leases.Inspect(ctx, "big")
	require.NoError(t, err)
	require.Empty(t, l.Owner, "released after the failure")

	b.queue.BeforeFunc = nil
	sum2, err := b.coordinator("c2").Run(ctx, coordinator.Trigger{Job: "big", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum2.Outcome)
	require.Equal(t, 95, sum2.Cursor)

	counts := b.queue.countByAsset(t)
	require.Len(t, counts, 95, "every asset enqueued")
	dups := 0
	for _, n := range counts {
		require.LessOrEqual(t, n, 2)
		dups += n - 1
	}
	require.LessOrEqual(t, dups, c.Checkpoint, "duplicates only from the chunk in flight")
}

// The lease is renewed during a long fan-out, so it never lapses under a
// live coordinator.
func TestLongFanOutRenewsLease(t *testing.T) {
	t.Parallel()
	d := bigJob("big", 100)
	d.Limits.LeaseTTL = 8 * time.Second
	b := setup(t, d)
	ctx := context.Background()
	var expiries []time.Time
	var lapsed []time.Time
	b.queue.BeforeFunc = wrapSerial(func([]queue.Message) error {
		b.clock.Advance(time.Second)
		if l, err := b.leases.Inspect(ctx, "big"); err == nil && l.Owner != "" {
			if !b.clock.Now().Before(l.ExpiresAt) {
				lapsed = append(lapsed, b.clock.Now())
			}
			expiries = append(expiries, l.ExpiresAt)
		}
		return nil
	})
	c := b.coordinator("c1")
	c.Checkpoint = 10 // one batch per chunk: 10 s of fan-out with an 8 s lease

	sum, err := c.Run(ctx, coordinator.Trigger{Job: "big", At: t0})
	require.NoError(t, err)
	require.Empty(t, sum.Stopped)
	require.Equal(t, 100, sum.Cursor)
	require.Empty(t, lapsed, "the lease lapsed under a live coordinator")
	require.True(t, expiries[len(expiries)-1].After(expiries[0]), "the lease was renewed")
}

// wrapSerial serialises a hook (SendAll calls it from several goroutines).
func wrapSerial(f func([]queue.Message) error) func([]queue.Message) error {
	var mu sync.Mutex
	return func(m []queue.Message) error {
		mu.Lock()
		defer mu.Unlock()
		return f(m)
	}
}

// Invariant 2: a finished tick is not re-run unless forced; Force opens
// generation 2 and fans the whole catalog out again.
func TestFinishedTickNotRerunWithoutForce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	first, err := b.coordinator("c1").Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, first.Outcome)

	b.clock.Advance(10 * time.Second)
	again, err := b.coordinator("c2").Run(ctx, coordinator.Trigger{Job: "fx", At: t0.Add(30 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeAlreadyFannedOut, again.Outcome)
	require.Equal(t, first.Run, again.Run)
	require.Zero(t, again.Enqueued)
	require.Len(t, b.queue.keys(t), 7)

	forced, err := b.coordinator("c3").Run(ctx, coordinator.Trigger{Job: "fx", At: t0, Force: true})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, forced.Outcome)
	require.Equal(t, 2, forced.Run.Generation)
	require.Equal(t, tick, forced.Run.Nominal)
	require.Equal(t, 7, forced.Enqueued)
	require.Greater(t, forced.Fence, first.Fence)

	gens := map[int][]string{}
	for _, k := range b.queue.keys(t) {
		gens[k.Run.Generation] = append(gens[k.Run.Generation], k.Asset)
	}
	for _, g := range []int{1, 2} {
		sort.Strings(gens[g])
		want := append([]string(nil), fx.Assets...)
		sort.Strings(want)
		require.Equal(t, want, gens[g], "generation %d", g)
	}
}

// TestRunMapsTriggersInTheJobsTimeZone: a job whose cron schedule is read
// in a time zone has its triggers mapped to that zone's ticks: 17:00 New
// York on weekdays is 22:00 UTC in winter, 21:00 UTC in summer.
func TestRunMapsTriggersInTheJobsTimeZone(t *testing.T) {
	t.Parallel()
	job := baton.Job{Name: "close", Schedule: "cron(0 17 ? * MON-FRI *)", TimeZone: "America/New_York", Assets: []string{"a"}}
	b := setup(t, job)
	for _, tc := range []struct{ at, want time.Time }{
		{time.Date(2026, 11, 23, 22, 0, 7, 0, time.UTC), time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)},
		{time.Date(2026, 7, 14, 21, 0, 3, 0, time.UTC), time.Date(2026, 7, 14, 21, 0, 0, 0, time.UTC)},
		// A Saturday trigger maps to Friday's close.
		{time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)},
	} {
		b.clock.Set(tc.at)
		sum, err := b.coordinator("c1").Run(context.Background(), coordinator.Trigger{Job: "close", At: tc.at})
		require.NoError(t, err)
		require.Equal(t, tc.want, sum.Nominal, "trigger at %s", tc.at)
	}
}
