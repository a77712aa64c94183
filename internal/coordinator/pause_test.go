package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// A paused job's ticks are skipped and recorded, not run: no lease, no
// run, no message. A forced replay runs; resuming runs the next tick and
// catches up none of the skipped ones.
func TestPausedJobSkipsAndRecordsTicks(t *testing.T) {
	t.Parallel()
	job := fx.Job(nil)
	job.CatchUp = baton.CatchUp{Window: 30 * time.Minute, MaxPerTrigger: 10}
	b := setup(t, job)
	ctx := context.Background()
	c := b.coordinator("c1")
	pauser, ok := lease.PauserOf(b.leases)
	require.True(t, ok)

	_, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0})
	require.NoError(t, err)
	_, err = pauser.SetPause(ctx, lease.SetPauseParams{Job: "fx", Paused: true, By: "ops", Reason: "provider outage", Now: t0.Add(10 * time.Second)})
	require.NoError(t, err)
	before := len(b.queue.keys(t))

	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		b.clock.Set(at)
		sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: at})
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomePaused, sum.Outcome)
		require.NotNil(t, sum.Pause)
		require.EqualValues(t, i, sum.Pause.Skipped)
		require.Equal(t, "ops", sum.Pause.By)
		_, err = b.ledger.GetRun(ctx, "fx", sum.Nominal)
		require.ErrorIs(t, err, ledger.ErrNotFound, "no run opened while paused")
	}
	// A duplicate trigger of a skipped tick counts once.
	sum, err := c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	require.EqualValues(t, 3, sum.Pause.Skipped)
	require.Equal(t, before, len(b.queue.keys(t)), "nothing enqueued while paused")
	l, err := b.leases.Inspect(ctx, "fx")
	require.NoError(t, err)
	require.EqualValues(t, 1, l.Fence, "the lease was not taken while paused")

	// An operator's forced replay runs a paused job's tick.
	sum, err = c.Run(ctx, coordinator.Trigger{Job: "fx", At: t0.Add(2 * time.Minute), Force: true})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)

	// Resumed: the next tick runs, and the ticks skipped are not caught up.
	_, err = pauser.SetPause(ctx, lease.SetPauseParams{Job: "fx", Paused: false, By: "ops", Now: t0.Add(3*time.Minute + 30*time.Second)})
	require.NoError(t, err)
	b.clock.Set(t0.Add(4 * time.Minute))
	sum, err = c.Run(ctx, coordinator.Trigger{Job: "fx", At: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	runs, err := b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: "fx", Limit: 100})
	require.NoError(t, err)
	var got []time.Time
	for _, r := range runs {
		got = append(got, r.ID.Nominal)
	}
	tick := t0.Truncate(time.Minute)
	require.ElementsMatch(t, []time.Time{tick, tick.Add(2 * time.Minute), tick.Add(4 * time.Minute)}, got,
		"the first tick, the forced replay and the tick after resuming; the paused ticks stay skipped")
}

// A pause flag that cannot be read fails the trigger (to be retried)
// rather than running a job that may be paused.
func TestPauseUnreadableFailsTheTrigger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.leases = unreadablePause{b.leases}
	_, err := b.coordinator("c1").Run(context.Background(), coordinator.Trigger{Job: "fx", At: t0})
	require.ErrorContains(t, err, "read pause")
	require.Empty(t, b.queue.keys(t))
}

type unreadablePause struct{ lease.Store }

func (unreadablePause) SetPause(context.Context, lease.SetPauseParams) (lease.Pause, error) {
	return lease.Pause{}, errors.New("down")
}
func (unreadablePause) PauseOf(context.Context, string) (lease.Pause, error) {
	return lease.Pause{}, errors.New("down")
}
func (unreadablePause) RecordSkipped(context.Context, string, time.Time) (lease.Pause, error) {
	return lease.Pause{}, errors.New("down")
}
