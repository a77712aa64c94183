package schedule

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// at parses "2006-01-02T15:04" or "2006-01-02T15:04:05.999999999" as UTC.
func at(t testing.TB, s string) time.Time {
	t.Helper()
	for _, layout := range []string{"2006-01-02T15:04", time.RFC3339Nano[:len("2006-01-02T15:04:05.999999999")]} {
		if v, err := time.Parse(layout, s); err == nil {
			return v
		}
	}
	t.Fatalf("bad time %q", s)
	return time.Time{}
}

func mustParse(t testing.TB, expr string) Schedule {
	t.Helper()
	s, err := Parse(expr)
	require.NoError(t, err, expr)
	return s
}

// TestNextExamples walks Next from a fixed instant and compares each tick
// with the instant worked out by hand from the calendar. 2026-05-15 is a
// Friday; 2026-05-31 a Sunday; 2026-08-01 and 2026-08-15 Saturdays;
// 2026-02-01 a Sunday.
func TestNextExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		expr string
		from string
		want []string
	}{
		// The examples of the EventBridge cron reference.
		{"10:00 every day", "cron(0 10 * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T10:00", "2026-05-17T10:00", "2026-05-18T10:00"}},
		{"12:15 every day", "cron(15 12 * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-15T12:15", "2026-05-16T12:15", "2026-05-17T12:15"}},
		{"18:00 Monday to Friday", "cron(0 18 ? * MON-FRI *)", "2026-05-15T12:00:30",
			[]string{"2026-05-15T18:00", "2026-05-18T18:00", "2026-05-19T18:00"}},
		{"08:00 on the 1st", "cron(0 8 1 * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-06-01T08:00", "2026-07-01T08:00", "2026-08-01T08:00"}},
		{"every 15 minutes", "cron(0/15 * * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-15T12:15", "2026-05-15T12:30", "2026-05-15T12:45", "2026-05-15T13:00"}},
		{"every 10 minutes Monday to Friday", "cron(0/10 * ? * MON-FRI *)", "2026-05-15T23:45",
			[]string{"2026-05-15T23:50", "2026-05-18T00:00", "2026-05-18T00:10"}},
		{"every 5 minutes 08:00-17:55 Monday to Friday", "cron(0/5 8-17 ? * MON-FRI *)", "2026-05-15T17:52",
			[]string{"2026-05-15T17:55", "2026-05-18T08:00", "2026-05-18T08:05"}},
		{"09:00 first Monday", "cron(0 9 ? * 2#1 *)", "2026-05-15T12:00:30",
			[]string{"2026-06-01T09:00", "2026-07-06T09:00", "2026-08-03T09:00"}},
		{"1/10 starts at minute 1", "cron(1/10 * * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-15T12:01", "2026-05-15T12:11", "2026-05-15T12:21"}},
		{"second Tuesday", "cron(0 0 ? * 3#2 *)", "2026-05-15T12:00:30",
			[]string{"2026-06-09T00:00", "2026-07-14T00:00", "2026-08-11T00:00"}},

		// Last days.
		{"last day of the month", "cron(0 0 L * ? *)", "2026-01-15T00:00",
			[]string{"2026-01-31T00:00", "2026-02-28T00:00", "2026-03-31T00:00", "2026-04-30T00:00"}},
		{"last day in a leap year", "cron(0 0 L 2 ? *)", "2027-06-01T00:00",
			[]string{"2028-02-29T00:00", "2029-02-28T00:00"}},
		{"last Friday", "cron(0 0 ? * 6L *)", "2026-05-15T12:00:30",
			[]string{"2026-05-29T00:00", "2026-06-26T00:00", "2026-07-31T00:00"}},
		{"last Friday by name", "cron(0 0 ? * FRIL *)", "2026-05-15T12:00:30",
			[]string{"2026-05-29T00:00", "2026-06-26T00:00", "2026-07-31T00:00"}},
		{"last Sunday", "cron(0 0 ? * 1L *)", "2026-05-15T12:00:30",
			[]string{"2026-05-31T00:00", "2026-06-28T00:00", "2026-07-26T00:00"}},
		{"last Saturday", "cron(0 0 ? * 7L *)", "2026-05-15T12:00:30",
			[]string{"2026-05-30T00:00", "2026-06-27T00:00", "2026-07-25T00:00"}},
		{"L in day-of-week is Saturday", "cron(0 0 ? * L *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T00:00", "2026-05-23T00:00", "2026-05-30T00:00"}},
		{"last weekday, month ending on a Sunday", "cron(0 0 LW * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-29T00:00", "2026-06-30T00:00", "2026-07-31T00:00", "2026-08-31T00:00"}},
		{"fifth Monday, skipping months without one", "cron(0 0 ? * 2#5 *)", "2026-05-15T12:00:30",
			[]string{"2026-06-29T00:00", "2026-08-31T00:00"}},

		// Nearest weekdays.
		{"15W on a Saturday moves to Friday", "cron(0 0 15W 8 ? *)", "2026-01-01T00:00",
			[]string{"2026-08-14T00:00"}},
		{"1W on a Saturday moves to Monday the 3rd", "cron(0 0 1W 8 ? *)", "2026-01-01T00:00",
			[]string{"2026-08-03T00:00"}},
		{"1W on a Sunday moves to Monday the 2nd", "cron(0 0 1W 2 ? *)", "2026-01-01T00:00",
			[]string{"2026-02-02T00:00"}},
		{"31W on a Sunday moves to Friday the 29th", "cron(0 0 31W 5 ? *)", "2026-01-01T00:00",
			[]string{"2026-05-29T00:00"}},
		{"3W on a Monday stays", "cron(0 0 3W 8 ? *)", "2026-01-01T00:00",
			[]string{"2026-08-03T00:00"}},
		{"31W skips short months", "cron(0 0 31W * ? 2026)", "2026-03-01T00:00",
			[]string{"2026-03-31T00:00", "2026-05-29T00:00", "2026-07-31T00:00", "2026-08-31T00:00"}},

		// Day-of-week counts from 1 = Sunday.
		{"1 is Sunday", "cron(0 12 ? * 1 *)", "2026-05-15T12:00:30", []string{"2026-05-17T12:00", "2026-05-24T12:00"}},
		{"2 is Monday", "cron(0 12 ? * 2 *)", "2026-05-15T12:00:30", []string{"2026-05-18T12:00"}},
		{"6 is Friday", "cron(0 12 ? * 6 *)", "2026-05-15T11:00", []string{"2026-05-15T12:00", "2026-05-22T12:00"}},
		{"7 is Saturday", "cron(0 12 ? * 7 *)", "2026-05-15T12:00:30", []string{"2026-05-16T12:00", "2026-05-23T12:00"}},
		{"SUN", "cron(0 12 ? * SUN *)", "2026-05-15T12:00:30", []string{"2026-05-17T12:00"}},
		{"sat lower case", "cron(0 12 ? * sat *)", "2026-05-15T12:00:30", []string{"2026-05-16T12:00"}},
		{"1#1 is the first Sunday", "cron(0 0 ? * 1#1 *)", "2026-05-15T12:00:30", []string{"2026-06-07T00:00", "2026-07-05T00:00"}},
		{"SUN,SAT", "cron(0 0 ? * SUN,SAT *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T00:00", "2026-05-17T00:00", "2026-05-23T00:00"}},
		{"1-7 is every day", "cron(0 0 ? * 1-7 *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T00:00", "2026-05-17T00:00", "2026-05-18T00:00"}},
		{"FRI-MON wraps over the weekend", "cron(0 12 ? * FRI-MON *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T12:00", "2026-05-17T12:00", "2026-05-18T12:00", "2026-05-22T12:00"}},
		{"7-1 wraps from Saturday to Sunday", "cron(0 12 ? * 7-1 *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T12:00", "2026-05-17T12:00", "2026-05-23T12:00"}},

		// Other fields.
		{"hours 22-2 wrap past midnight", "cron(30 22-2 * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-15T22:30", "2026-05-15T23:30", "2026-05-16T00:30", "2026-05-16T01:30", "2026-05-16T02:30", "2026-05-16T22:30"}},
		{"stepped range", "cron(10-40/15 9 * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-16T09:10", "2026-05-16T09:25", "2026-05-16T09:40", "2026-05-17T09:10"}},
		{"every 4 hours", "cron(0 0/4 * * ? *)", "2026-05-15T12:00:30",
			[]string{"2026-05-15T16:00", "2026-05-15T20:00", "2026-05-16T00:00"}},
		{"month names", "cron(0 0 1 JAN,jul ? *)", "2026-05-15T12:00:30",
			[]string{"2026-07-01T00:00", "2027-01-01T00:00", "2027-07-01T00:00"}},
		{"month range by name", "cron(0 0 1 NOV-FEB ? *)", "2026-05-15T12:00:30",
			[]string{"2026-11-01T00:00", "2026-12-01T00:00", "2027-01-01T00:00", "2027-02-01T00:00", "2027-11-01T00:00"}},
		{"days of the month list", "cron(0 6 1,15,31 * ? *)", "2026-04-16T00:00",
			[]string{"2026-05-01T06:00", "2026-05-15T06:00", "2026-05-31T06:00", "2026-06-01T06:00"}},
		{"day-of-month step", "cron(0 0 1/10 * ? *)", "2026-02-02T00:00",
			[]string{"2026-02-11T00:00", "2026-02-21T00:00", "2026-03-01T00:00", "2026-03-11T00:00", "2026-03-21T00:00", "2026-03-31T00:00"}},
		{"February 29th", "cron(0 0 29 2 ? *)", "2026-01-01T00:00",
			[]string{"2028-02-29T00:00", "2032-02-29T00:00"}},
		{"years", "cron(0 0 1 1 ? 2027-2028)", "2026-05-15T12:00:30",
			[]string{"2027-01-01T00:00", "2028-01-01T00:00"}},
		{"leading zeros", "cron(05 08 01 01 ? *)", "2026-05-15T12:00:30", []string{"2027-01-01T08:05"}},

		// Rates are aligned to the epoch.
		{"rate(1 minute)", "rate(1 minute)", "2026-05-15T12:01:07", []string{"2026-05-15T12:02", "2026-05-15T12:03"}},
		{"rate(5 minutes)", "rate(5 minutes)", "2026-05-15T12:03:07", []string{"2026-05-15T12:05", "2026-05-15T12:10"}},
		{"rate(1 hour)", "rate(1 hour)", "2026-05-15T12:03:07", []string{"2026-05-15T13:00", "2026-05-15T14:00"}},
		{"rate(1 day)", "rate(1 day)", "2026-05-15T12:03:07", []string{"2026-05-16T00:00", "2026-05-17T00:00"}},
		// 2026-05-15T00:00Z is 494112 hours after the epoch, 2 past a multiple of 5.
		{"rate(5 hours)", "rate(5 hours)", "2026-05-15T12:00", []string{"2026-05-15T13:00", "2026-05-15T18:00", "2026-05-15T23:00", "2026-05-16T04:00"}},
		// The epoch was a Thursday.
		{"rate(7 days)", "rate(7 days)", "2026-05-15T12:00", []string{"2026-05-21T00:00", "2026-05-28T00:00"}},
		{"rate(90 minutes)", "rate(90 minutes)", "2026-05-15T00:00", []string{"2026-05-15T01:30", "2026-05-15T03:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.expr)
			require.Equal(t, tt.expr, s.String())
			got := at(t, tt.from)
			for i, w := range tt.want {
				want := at(t, w)
				got = s.Next(got)
				require.Equal(t, want, got, "tick %d", i)
				require.Equal(t, time.UTC, got.Location())
				require.Equal(t, want, s.Prev(want), "a tick is its own Prev")
				require.Equal(t, want, s.Prev(want.Add(time.Minute-time.Nanosecond)), "Prev just before the next minute")
				require.True(t, s.Prev(want.Add(-time.Nanosecond)).Before(want), "Prev just before a tick")
			}
		})
	}
}

func TestNextAfterLastTick(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "cron(0 0 1 1 ? 2027-2028)")
	require.True(t, s.Next(at(t, "2028-01-01T00:00")).IsZero())
	require.True(t, s.Prev(at(t, "2026-12-31T23:59")).IsZero())
	require.Equal(t, at(t, "2028-01-01T00:00"), s.Prev(at(t, "2095-01-01T00:00")))

	// Years go to 2199, as AWS's do.
	every := mustParse(t, "cron(0 0 1 1 ? *)")
	require.Equal(t, at(t, "2099-01-01T00:00"), every.Next(at(t, "2098-06-01T00:00")))
	require.Equal(t, at(t, "2100-01-01T00:00"), every.Next(at(t, "2099-01-01T00:00")))
	require.Equal(t, at(t, "2199-01-01T00:00"), every.Next(at(t, "2198-06-01T00:00")))
	require.True(t, every.Next(at(t, "2199-01-01T00:00")).IsZero())
	require.Equal(t, at(t, "2150-01-01T00:00"), every.Prev(at(t, "2150-01-01T00:00")))
	require.True(t, every.Prev(at(t, "1969-12-31T23:59")).IsZero())
	require.Equal(t, at(t, "1970-01-01T00:00"), every.Next(time.Time{}))
	require.Equal(t, at(t, "1970-01-01T00:00"), every.Prev(at(t, "1970-01-01T00:00")))

	late := mustParse(t, "cron(0 0 1 1 ? 2090-2199)")
	require.Equal(t, at(t, "2199-01-01T00:00"), late.Prev(at(t, "2199-06-01T00:00")))

	// The ticks of 2100–2199 follow those years' own calendars.
	mondays := mustParse(t, "cron(0 0 ? * MON 2100)")
	require.Equal(t, at(t, "2100-01-04T00:00"), mondays.Next(at(t, "2026-01-01T00:00")), "2100 begins on a Friday")
	feb := mustParse(t, "cron(0 0 L 2 ? 2100,2104)")
	require.Equal(t, at(t, "2100-02-28T00:00"), feb.Next(at(t, "2026-01-01T00:00")), "2100 is not a leap year")
	require.Equal(t, at(t, "2104-02-29T00:00"), feb.Next(at(t, "2100-03-01T00:00")), "2104 is")
	lastFri := mustParse(t, "cron(30 8 ? 12 6L 2150)")
	require.Equal(t, at(t, "2150-12-25T08:30"), lastFri.Next(at(t, "2150-12-01T00:00")), "the last Friday of December 2150")
}

func TestLocationIgnored(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "cron(0 10 * * ? *)")
	eastOfUTC := time.FixedZone("UTC+10", 10*3600)
	// 2026-05-16T05:00 at UTC+10 is 2026-05-15T19:00Z.
	from := time.Date(2026, 5, 16, 5, 0, 0, 0, eastOfUTC)
	require.Equal(t, at(t, "2026-05-16T10:00"), s.Next(from))
	require.Equal(t, at(t, "2026-05-15T10:00"), s.Prev(from))
	r := mustParse(t, "rate(1 day)")
	require.Equal(t, at(t, "2026-05-15T00:00"), r.Prev(from))
	require.Equal(t, time.UTC, r.Prev(from).Location())
}

func TestZeroSchedule(t *testing.T) {
	t.Parallel()
	var s Schedule
	now := at(t, "2026-05-15T12:00")
	require.True(t, s.Next(now).IsZero())
	require.True(t, s.Prev(now).IsZero())
	require.Empty(t, s.String())
	ticks, err := s.Ticks(now, now.Add(time.Hour), 10)
	require.NoError(t, err)
	require.Empty(t, ticks)
}

func TestTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr     string
		from, to string
		max      int
		want     []string
	}{
		{"both ends included", "rate(5 minutes)", "2026-05-15T12:00", "2026-05-15T12:15", 10,
			[]string{"2026-05-15T12:00", "2026-05-15T12:05", "2026-05-15T12:10", "2026-05-15T12:15"}},
		{"ends off the ticks", "rate(5 minutes)", "2026-05-15T12:00:00.000000001", "2026-05-15T12:14:59.999999999", 10,
			[]string{"2026-05-15T12:05", "2026-05-15T12:10"}},
		{"one instant on a tick", "rate(1 hour)", "2026-05-15T12:00", "2026-05-15T12:00", 1,
			[]string{"2026-05-15T12:00"}},
		{"one instant off the ticks", "rate(1 hour)", "2026-05-15T12:01", "2026-05-15T12:01", 0, nil},
		{"exactly max", "cron(0/15 * * * ? *)", "2026-05-15T12:00", "2026-05-15T13:00", 5,
			[]string{"2026-05-15T12:00", "2026-05-15T12:15", "2026-05-15T12:30", "2026-05-15T12:45", "2026-05-15T13:00"}},
		{"weekdays across a weekend", "cron(0 18 ? * MON-FRI *)", "2026-05-15T00:00", "2026-05-19T00:00", 10,
			[]string{"2026-05-15T18:00", "2026-05-18T18:00"}},
		{"past 2099", "cron(0 0 1 1 ? *)", "2098-01-01T00:00", "2101-01-01T00:00", 10,
			[]string{"2098-01-01T00:00", "2099-01-01T00:00", "2100-01-01T00:00", "2101-01-01T00:00"}},
		{"none", "cron(0 0 1 1 ? 2027)", "2028-01-01T00:00", "2030-01-01T00:00", 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.expr)
			got, err := s.Ticks(at(t, tt.from), at(t, tt.to), tt.max)
			require.NoError(t, err)
			var want []time.Time
			for _, w := range tt.want {
				want = append(want, at(t, w))
			}
			require.Equal(t, want, got)
		})
	}
}

func TestTicksTooMany(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr     string
		from, to string
		max      int
		count    string
	}{
		{"rate(1 minute)", "2026-05-15T00:00", "2026-05-16T00:00", 100, "1441 ticks"},
		{"rate(1 day)", "2026-05-15T00:00:01", "2026-05-18T00:00", 2, "3 ticks"},
		{"cron(0/15 * * * ? *)", "2026-05-15T00:00", "2026-05-16T00:00", 10, "97 ticks"},
		{"cron(0/15 * * * ? *)", "2026-05-15T00:00", "2026-05-15T01:00", 4, "5 ticks"},
		{"cron(0 0 ? * MON-FRI *)", "2026-05-01T00:00", "2026-05-31T23:59", 0, "21 ticks"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.expr)
			got, err := s.Ticks(at(t, tt.from), at(t, tt.to), tt.max)
			require.ErrorIs(t, err, ErrTooManyTicks)
			require.ErrorContains(t, err, tt.count)
			require.ErrorContains(t, err, tt.expr)
			require.Nil(t, got)
		})
	}
}

func TestTicksCountCapped(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "cron(* * * * ? *)")
	from := at(t, "2026-05-15T00:00")
	n, more := s.countFrom(from, from.Add(time.Hour), 10)
	require.Equal(t, 10, n)
	require.True(t, more)
	n, more = s.countFrom(from, from.Add(time.Hour), 100)
	require.Equal(t, 61, n)
	require.False(t, more)
}

func TestTicksBadRange(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "rate(1 hour)")
	from := at(t, "2026-05-15T00:00")
	_, err := s.Ticks(from, from.Add(-time.Nanosecond), 10)
	require.ErrorContains(t, err, "start after end")
	_, err = s.Ticks(from, from.Add(time.Hour), -1)
	require.ErrorContains(t, err, "negative limit")
	require.False(t, errors.Is(err, ErrTooManyTicks))
}

// TestConcurrentUse runs Next and Prev of one Schedule from several
// goroutines; run with -race it checks the engine's scratch state is not
// shared.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "cron(0/5 8-17 ? * MON-FRI *)")
	from := at(t, "2026-05-15T00:00")
	var want []time.Time
	for i := range 200 {
		want = append(want, s.Next(from.Add(time.Duration(i)*37*time.Minute)))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for i, w := range want {
				tt := from.Add(time.Duration(i) * 37 * time.Minute)
				if got := s.Next(tt); !got.Equal(w) {
					errs <- "Next(" + tt.String() + ") = " + got.String()
					return
				}
				if p := s.Prev(w); !p.Equal(w) {
					errs <- "Prev(" + w.String() + ") = " + p.String()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
