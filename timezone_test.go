package baton_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/schedule"
)

// TestJobTimeZone: a job's TimeZone is checked by NewCatalog, naming it,
// and its cron schedule is read in it.
func TestJobTimeZone(t *testing.T) {
	t.Parallel()
	job := baton.Job{Name: "close", Schedule: "cron(0 17 ? * MON-FRI *)", TimeZone: "America/New_York", Assets: []string{"a"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	c, err := baton.NewCatalog(job)
	require.NoError(t, err)
	j, err := c.Lookup("close")
	require.NoError(t, err)
	s, err := schedule.ParseIn(j.Schedule, j.TimeZone)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC), s.Next(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)), "17:00 EST on Monday")

	for zone, want := range map[string]string{
		"Mars/Olympus":    `job close: TimeZone: unknown time zone "Mars/Olympus": want an IANA name such as Europe/London`,
		"Local":           `unknown time zone "Local"`,
		"America/NewYork": `unknown time zone "America/NewYork"`,
	} {
		bad := job
		bad.TimeZone = zone
		_, err := baton.NewCatalog(bad)
		require.ErrorIs(t, err, schedule.ErrUnknownZone, zone)
		require.ErrorContains(t, err, want, zone)
	}
}
