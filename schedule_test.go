package baton_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
)

// A job without a Schedule is valid: it runs on demand (submissions) or
// by a chain. What only a schedule gives meaning to is refused, named.
func TestJobWithoutSchedule(t *testing.T) {
	t.Parallel()
	job := baton.Job{Name: "reindex", Assets: []string{"all"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	require.NoError(t, job.Validate())
	require.False(t, job.Scheduled())

	zoned := job
	zoned.TimeZone = "Europe/London"
	require.ErrorContains(t, zoned.Validate(), "job reindex: TimeZone Europe/London without a Schedule")
	caughtUp := job
	caughtUp.CatchUp = baton.CatchUp{Window: time.Hour}
	require.ErrorContains(t, caughtUp.Validate(), "job reindex: CatchUp without a Schedule")

	parent := baton.Job{Name: "feeds", Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: job.Processor,
		Chains: []baton.Chain{{Job: "reindex"}}}
	require.True(t, parent.Scheduled())
	c, err := baton.NewCatalog(parent, job)
	require.NoError(t, err, "a chain child needs no schedule")
	require.Equal(t, []string{"feeds", "reindex"}, c.Names())
}
