package coordinator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
)

// A job without a schedule runs on demand: a trigger (whatever sent it)
// is refused with an error naming the job, before any lease or run; a
// submission opens its run.
func TestTriggerOfAJobWithoutScheduleIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, baton.Job{Name: "reindex", Assets: []string{"all"}})
	ctx := context.Background()
	c := b.coordinator("test")
	_, err := c.Run(ctx, coordinator.Trigger{Job: "reindex", At: t0})
	require.ErrorIs(t, err, baton.ErrNoSchedule)
	require.ErrorContains(t, err, "job reindex has no schedule")
	_, err = b.leases.Inspect(ctx, "reindex")
	require.ErrorIs(t, err, lease.ErrNotFound, "no lease taken")
	sum, err := c.Submit(ctx, coordinator.Submission{Job: "reindex", Key: "k", Items: []baton.Item{{Name: "a"}}})
	require.NoError(t, err)
	require.Equal(t, "reindex+k#1", sum.Run.String())
}
