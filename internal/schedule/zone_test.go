package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/schedule"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// TestParseInReadsCronInTheZone: a cron expression's fields are read in
// the schedule's time zone, as EventBridge Scheduler's
// ScheduleExpressionTimezone reads them; ticks stay UTC instants.
func TestParseInReadsCronInTheZone(t *testing.T) {
	t.Parallel()
	london, err := schedule.ParseIn("cron(0 9 * * ? *)", "Europe/London")
	require.NoError(t, err)
	require.Equal(t, "Europe/London", london.Zone())
	require.Equal(t, utc("2026-01-15T09:00:00Z"), london.Next(utc("2026-01-15T08:00:00Z")), "GMT in winter")
	require.Equal(t, utc("2026-07-15T08:00:00Z"), london.Next(utc("2026-07-15T07:00:00Z")), "BST in summer: 09:00 London is 08:00 UTC")
	require.Equal(t, utc("2026-07-15T08:00:00Z"), london.Prev(utc("2026-07-15T08:30:00Z")))
	require.Equal(t, time.UTC, london.Next(utc("2026-07-15T07:00:00Z")).Location())

	// Day boundaries are the zone's: Monday 00:30 in Tokyo is Sunday
	// 15:30 UTC.
	tokyo, err := schedule.ParseIn("cron(30 0 ? * MON *)", "Asia/Tokyo")
	require.NoError(t, err)
	require.Equal(t, utc("2026-11-22T15:30:00Z"), tokyo.Next(utc("2026-11-21T00:00:00Z")))

	// UTC, "" and a rate are unaffected.
	for _, zone := range []string{"", "UTC"} {
		s, err := schedule.ParseIn("cron(0 9 * * ? *)", zone)
		require.NoError(t, err)
		require.Equal(t, "", s.Zone())
		require.Equal(t, utc("2026-07-15T09:00:00Z"), s.Next(utc("2026-07-15T07:00:00Z")))
	}
	rate, err := schedule.ParseIn("rate(1 day)", "America/New_York")
	require.NoError(t, err)
	require.Equal(t, utc("2026-07-16T00:00:00Z"), rate.Next(utc("2026-07-15T07:00:00Z")))
}

// TestParseInAcrossDaylightSaving: across the zone's clock changes the
// ticks stay strictly increasing and each Prev of a tick is itself; as in
// EventBridge Scheduler, a time that does not exist (spring forward) is
// skipped, and one that occurs twice (autumn) runs once.
func TestParseInAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"cron(30 2 * * ? *)", "cron(30 1 * * ? *)", "cron(0/15 * * * ? *)"} {
		s, err := schedule.ParseIn(expr, "America/New_York")
		require.NoError(t, err)
		for _, span := range [][2]string{{"2026-03-06T00:00:00Z", "2026-03-11T00:00:00Z"}, {"2026-10-30T00:00:00Z", "2026-11-04T00:00:00Z"}} {
			ticks, err := s.Ticks(utc(span[0]), utc(span[1]), 10_000)
			require.NoError(t, err)
			require.NotEmpty(t, ticks)
			for i, tk := range ticks {
				require.Equal(t, tk, s.Prev(tk), "%s: Prev of tick %s", expr, tk)
				if i > 0 {
					require.True(t, tk.After(ticks[i-1]), "%s: %s after %s", expr, tk, ticks[i-1])
				}
			}
		}
	}
	daily, err := schedule.ParseIn("cron(30 2 * * ? *)", "America/New_York")
	require.NoError(t, err)
	ticks, err := daily.Ticks(utc("2026-03-06T12:00:00Z"), utc("2026-03-11T12:00:00Z"), 100)
	require.NoError(t, err)
	require.Equal(t, []time.Time{utc("2026-03-07T07:30:00Z"), utc("2026-03-09T06:30:00Z"), utc("2026-03-10T06:30:00Z"), utc("2026-03-11T06:30:00Z")}, ticks,
		"02:30 EST, then none on 8 March (02:30 does not exist), then 02:30 EDT")
	autumn, err := schedule.ParseIn("cron(30 1 * * ? *)", "America/New_York")
	require.NoError(t, err)
	ticks, err = autumn.Ticks(utc("2026-10-31T12:00:00Z"), utc("2026-11-02T12:00:00Z"), 100)
	require.NoError(t, err)
	require.Equal(t, []time.Time{utc("2026-11-01T05:30:00Z"), utc("2026-11-02T06:30:00Z")}, ticks, "01:30 once on 1 November, which has it twice")
}

func TestParseInRefusesUnknownZones(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"Mars/Olympus", "Local", "/etc/localtime", "../etc/passwd", "utc "} {
		_, err := schedule.ParseIn("cron(0 9 * * ? *)", zone)
		require.ErrorIs(t, err, schedule.ErrUnknownZone, zone)
		require.ErrorContains(t, err, "unknown time zone", zone)
	}
	_, err := schedule.ParseIn("cron(0 9 * * ? )", "Europe/London")
	require.ErrorIs(t, err, schedule.ErrInvalid, "the expression is still checked")
}
