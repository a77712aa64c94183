package schedule

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr  string
		field int    // 0: not a field error
		want  string // the whole message, or a part of it when partial
		part  bool
	}{
		// Shape.
		{"", 0, `"": want rate(value unit) or cron(minutes hours day-of-month month day-of-week year)`, false},
		{"every 5 minutes", 0, `"every 5 minutes": want rate(value unit)`, true},
		{"RATE(5 minutes)", 0, `"RATE(5 minutes)": want rate(value unit)`, true},
		{" cron(0 10 * * ? *)", 0, `" cron(0 10 * * ? *)": want`, true},
		{"cron(0 10 * * ? *", 0, `"cron(0 10 * * ? *": want`, true},
		{"cron(0 10 * * ?)", 0, "cron(0 10 * * ?): want 6 fields (minutes hours day-of-month month day-of-week year), got 5", false},
		{"cron(0 0 10 * * ? *)", 0, "got 7", true},
		{"cron()", 0, "cron(): separate the fields by single spaces, with none before the first or after the last", false},
		{"cron( 0 10 * * ? * )", 0, "separate the fields by single spaces, with none before the first or after the last", true},
		{"cron(0  10 * * ? *)", 0, "separate the fields by single spaces", true},
		{"cron(0\t10 * * ? *)", 0, `character '\t' at byte 6: only single spaces separate the parts`, true},
		{"cron(0\u00a010 * * ? *)", 0, `character '\u00a0' at byte 6: only single spaces separate the parts`, true},
		{"rate( 5 minutes)", 0, "want rate(value unit) with one space", true},
		{"rate(5  minutes)", 0, "want rate(value unit) with one space", true},
		{"rate(05 minutes)", 0, `value "05" is not a positive integer without leading zeros`, true},

		// Rates.
		{"rate(1 minutes)", 0, `rate(1 minutes): value 1 takes the singular unit "minute"`, false},
		{"rate(1 hours)", 0, `rate(1 hours): value 1 takes the singular unit "hour"`, false},
		{"rate(1 days)", 0, `rate(1 days): value 1 takes the singular unit "day"`, false},
		{"rate(5 minute)", 0, `rate(5 minute): value 5 takes the plural unit "minutes"`, false},
		{"rate(2 hour)", 0, `rate(2 hour): value 2 takes the plural unit "hours"`, false},
		{"rate(10 day)", 0, `rate(10 day): value 10 takes the plural unit "days"`, false},
		{"rate(0 minutes)", 0, `rate(0 minutes): value "0" is not a positive integer without leading zeros`, false},
		{"rate(-5 minutes)", 0, `value "-5" is not a positive integer`, true},
		{"rate(+5 minutes)", 0, `value "+5" is not a positive integer`, true},
		{"rate(1.5 hours)", 0, `value "1.5" is not a positive integer`, true},
		{"rate(99999999999999999999 minutes)", 0, "is not a positive integer", true},
		{"rate(200000000 days)", 0, "rate(200000000 days): value 200000000 is too large", false},
		{"rate(5 weeks)", 0, `rate(5 weeks): unknown unit "weeks": want minute, minutes, hour, hours, day or days`, false},
		{"rate(5 Minutes)", 0, `unknown unit "Minutes"`, true},
		{"rate(5)", 0, "rate(5): want rate(value unit) with one space, as in rate(5 minutes)", false},
		{"rate(5 minutes now)", 0, "want rate(value unit)", true},
		{"rate()", 0, "want rate(value unit)", true},

		// Field 1, minutes.
		{"cron(60 * * * ? *)", 1, `cron(60 * * * ? *): field 1 (minutes) "60": value out of range 0-59`, false},
		{"cron(5-70 * * * ? *)", 1, `field 1 (minutes) "5-70": end 70 out of range 0-59`, true},
		{"cron(70-5 * * * ? *)", 1, `field 1 (minutes) "70-5": start 70 out of range 0-59`, true},
		{"cron(*/0 * * * ? *)", 1, `field 1 (minutes) "*/0": step 0 out of range 1-59`, true},
		{"cron(0/60 * * * ? *)", 1, `field 1 (minutes) "0/60": step 60 out of range 1-59`, true},
		{"cron(0/x * * * ? *)", 1, `field 1 (minutes) "0/x": step "x" is not a number`, true},
		{"cron(/5 * * * ? *)", 1, `field 1 (minutes) "/5": a step needs a start, as in 0/5 or */5`, true},
		{"cron(a * * * ? *)", 1, `field 1 (minutes) "a": value "a" is not a number`, true},
		{"cron(1,,2 * * * ? *)", 1, `field 1 (minutes) "1,,2": empty list item`, true},
		{"cron(1, * * * ? *)", 1, `field 1 (minutes) "1,": empty list item`, true},
		{"cron(*,5 * * * ? *)", 1, `field 1 (minutes) "*": must stand alone, not in a list`, true},
		{"cron(? * * * ? *)", 1, `field 1 (minutes) "?": only day-of-month and day-of-week may be "?"`, true},
		{"cron(-1 * * * ? *)", 1, `field 1 (minutes) "-1": start "" is not a number`, true},
		{"cron(00001 * * * ? *)", 1, `field 1 (minutes) "00001": value "00001" is not a number`, true},
		{"cron(L * * * ? *)", 1, `field 1 (minutes) "L"`, true},

		// Field 2, hours.
		{"cron(0 24 * * ? *)", 2, `field 2 (hours) "24": value out of range 0-23`, true},
		{"cron(0 MON * * ? *)", 2, `field 2 (hours) "MON": value "MON" is not a number`, true},
		{"cron(0 0/24 * * ? *)", 2, `field 2 (hours) "0/24": step 24 out of range 1-23`, true},

		// Field 3, day-of-month.
		{"cron(0 0 32 * ? *)", 3, `field 3 (day-of-month) "32": value out of range 1-31`, true},
		{"cron(0 0 0 * ? *)", 3, `field 3 (day-of-month) "0": value out of range 1-31`, true},
		{"cron(0 0 L-2 * ? *)", 3, `field 3 (day-of-month) "L-2": offsets from the last day (L-n) are not supported`, true},
		{"cron(0 0 W * ? *)", 3, `field 3 (day-of-month) "W": W needs a day, as in 15W`, true},
		{"cron(0 0 32W * ? *)", 3, `field 3 (day-of-month) "32W": day 32 out of range 1-31`, true},
		{"cron(0 0 1W,15W * ? *)", 3, `field 3 (day-of-month) "1W,15W": L, LW and nW must stand alone, not in a list`, true},
		{"cron(0 0 L,15 * ? *)", 3, `must stand alone`, true},
		{"cron(0 0 1-5W * ? *)", 3, `field 3 (day-of-month) "1-5W": day "1-5" is not a number`, true},
		{"cron(0 0 MON * ? *)", 3, `field 3 (day-of-month) "MON"`, true},

		// Field 4, month.
		{"cron(0 0 1 13 ? *)", 4, `field 4 (month) "13": value out of range 1-12`, true},
		{"cron(0 0 1 0 ? *)", 4, `field 4 (month) "0": value out of range 1-12`, true},
		{"cron(0 0 1 JANUARY ? *)", 4, `field 4 (month) "JANUARY": value "JANUARY" is not a number or a three-letter name`, true},
		{"cron(0 0 1 JAN-FOO ? *)", 4, `field 4 (month) "JAN-FOO": end "FOO" is not a number or a three-letter name`, true},
		{"cron(0 0 1 ? ? *)", 4, `field 4 (month) "?": only day-of-month and day-of-week may be "?"`, true},

		// Field 5, day-of-week.
		{"cron(0 0 ? * 9 *)", 5, `cron(0 0 ? * 9 *): field 5 (day-of-week) "9": value out of range 1-7`, false},
		{"cron(0 0 ? * 0 *)", 5, `field 5 (day-of-week) "0": value out of range 1-7`, true},
		{"cron(0 0 ? * 0-4 *)", 5, `field 5 (day-of-week) "0-4": start 0 out of range 1-7`, true},
		{"cron(0 0 ? * 8L *)", 5, `field 5 (day-of-week) "8L": day 8 out of range 1-7`, true},
		{"cron(0 0 ? * 8#1 *)", 5, `field 5 (day-of-week) "8#1": day 8 out of range 1-7`, true},
		{"cron(0 0 ? * 2#6 *)", 5, `field 5 (day-of-week) "2#6": occurrence "6" out of range 1-5`, true},
		{"cron(0 0 ? * 2#0 *)", 5, `occurrence "0" out of range 1-5`, true},
		{"cron(0 0 ? * 2# *)", 5, `occurrence "" out of range 1-5`, true},
		{"cron(0 0 ? * 3#1,6#3 *)", 5, `field 5 (day-of-week) "3#1,6#3": nL and n#k must stand alone, not in a list`, true},
		{"cron(0 0 ? * 6L,2 *)", 5, `must stand alone`, true},
		{"cron(0 0 ? * MON/2 *)", 5, `field 5 (day-of-week) "MON/2": steps (/) are not allowed in day-of-week`, true},
		{"cron(0 0 ? * FUN *)", 5, `field 5 (day-of-week) "FUN": value "FUN" is not a number or a three-letter name`, true},
		{"cron(0 0 ? * MONDAY *)", 5, `value "MONDAY" is not a number or a three-letter name`, true},
		{"cron(0 0 ? * ? *)", 5, `field 5 (day-of-week) "?": day-of-month and day-of-week can't both be "?"`, true},
		{"cron(0 0 * * * *)", 5, `field 5 (day-of-week) "*": one of day-of-month and day-of-week must be "?" (day-of-month is "*")`, true},
		{"cron(0 0 1 * MON *)", 5, `one of day-of-month and day-of-week must be "?"`, true},
		{"cron(0 0 L * 6L *)", 5, `one of day-of-month and day-of-week must be "?"`, true},

		// Field 6, year.
		{"cron(0 0 * * ? 1969)", 6, `field 6 (year) "1969": value out of range 1970-2199`, true},
		{"cron(0 0 * * ? 2200)", 6, `field 6 (year) "2200": value out of range 1970-2199`, true},
		{"cron(0 0 * * ? 2030-2020)", 6, `field 6 (year) "2030-2020": range start 2030 is after its end 2020`, true},
		{"cron(0 0 * * ? 20265)", 6, `value "20265" is not a number`, true},

		// Never fires.
		{"cron(0 0 30 2 ? *)", 0, "cron(0 0 30 2 ? *): never fires between 1970 and 2199", false},
		{"cron(0 0 31 4,6,9,11 ? *)", 0, "never fires", true},
		{"cron(0 0 29 2 ? 2097-2099)", 0, "never fires", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.expr)
			require.Error(t, err)
			require.Equal(t, Schedule{}, s)
			require.ErrorIs(t, err, ErrInvalid)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.expr, pe.Expr)
			require.Equal(t, tt.field, pe.Field)
			if tt.part {
				require.Contains(t, err.Error(), tt.want)
			} else {
				require.Equal(t, tt.want, err.Error())
			}
		})
	}
}

// TestParseWrapped checks that callers can wrap a parse error and still
// match it.
func TestParseWrapped(t *testing.T) {
	t.Parallel()
	_, err := Parse("rate(1 minutes)")
	wrapped := fmt.Errorf("job fx: %w", err)
	require.ErrorIs(t, wrapped, ErrInvalid)
	require.False(t, errors.Is(wrapped, ErrTooManyTicks))
}

// TestParseValid covers forms that are valid and not already walked by
// TestNextExamples: each must parse and fire.
func TestParseValid(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"cron(* * * * ? *)",
		"cron(0 0 ? * * *)",
		"cron(0 0 * * ? 2026)",
		"cron(0 0 * * ? 1970-2199)",
		"cron(0 0 * * ? 2090/5)",
		"cron(0 0 * * ? */10)",
		"cron(59 23 31 12 ? *)",
		"cron(0 0 L 2 ? *)",
		"cron(0 0 LW * ? *)",
		"cron(0 0 lw * ? *)",
		"cron(0 0 15w * ? *)",
		"cron(0 0 ? * 1#5 *)",
		"cron(0 0 ? * fri#3 *)",
		"cron(0 0 ? * SUN-SAT *)",
		"cron(0 0 ? * 1,2,3,4,5,6,7 *)",
		"cron(0 0 1-31/2 * ? *)",
		"cron(0 0 31-1 * ? *)",
		"cron(0,30 */6 1,15 JAN-MAR,OCT ? *)",
		"rate(1 minute)",
		"rate(2 minutes)",
		"rate(1 hour)",
		"rate(24 hours)",
		"rate(1 day)",
		"rate(365 days)",
	} {
		s, err := Parse(expr)
		require.NoError(t, err, expr)
		require.Equal(t, expr, s.String())
		from := at(t, "2026-05-15T12:00:30")
		next := s.Next(from)
		require.False(t, next.IsZero(), expr)
		require.True(t, next.After(from), expr)
		require.Zero(t, next.Second()+next.Nanosecond(), expr)
	}
}

func TestRateValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr   string
		period time.Duration
	}{
		{"rate(1 minute)", time.Minute},
		{"rate(5 minutes)", 5 * time.Minute},
		{"rate(1 hour)", time.Hour},
		{"rate(12 hours)", 12 * time.Hour},
		{"rate(1 day)", 24 * time.Hour},
		{"rate(7 days)", 7 * 24 * time.Hour},
		{"rate(100000 days)", 100000 * 24 * time.Hour},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.expr)
		epoch := time.Unix(0, 0).UTC()
		// Epoch-aligned: the epoch is a tick, and so is every multiple of
		// the period on either side of it.
		require.Equal(t, epoch, s.Prev(epoch), tt.expr)
		require.Equal(t, epoch.Add(tt.period), s.Next(epoch), tt.expr)
		require.Equal(t, epoch.Add(-tt.period), s.Prev(epoch.Add(-time.Nanosecond)), tt.expr)
		require.Equal(t, epoch.Add(-tt.period), s.Next(epoch.Add(-tt.period-time.Nanosecond)), tt.expr)
	}
}

func TestRatePrevIsTheNominalTick(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr, trigger, nominal string
	}{
		{"rate(1 minute)", "2026-05-15T12:01:07", "2026-05-15T12:01"},
		{"rate(1 minute)", "2026-05-15T12:01:00", "2026-05-15T12:01"},
		{"rate(1 minute)", "2026-05-15T12:00:59.999999999", "2026-05-15T12:00"},
		{"rate(5 minutes)", "2026-05-15T12:09:59", "2026-05-15T12:05"},
		{"rate(1 hour)", "2026-05-15T12:59:00", "2026-05-15T12:00"},
		{"rate(1 day)", "2026-05-15T23:59:59", "2026-05-15T00:00"},
		{"rate(1 hour)", "1969-12-31T23:30:00", "1969-12-31T23:00"},
		{"rate(1 day)", "1900-03-01T12:00:00", "1900-03-01T00:00"},
		{"cron(0 10 * * ? *)", "2026-05-15T10:00:07", "2026-05-15T10:00"},
		{"cron(0 10 * * ? *)", "2026-05-15T09:59:59", "2026-05-14T10:00"},
		{"cron(0/15 * * * ? *)", "2026-05-15T12:44:59.999999999", "2026-05-15T12:30"},
		{"cron(0 18 ? * MON-FRI *)", "2026-05-18T17:00", "2026-05-15T18:00"},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.expr)
		require.Equal(t, at(t, tt.nominal), s.Prev(at(t, tt.trigger)), "%s at %s", tt.expr, tt.trigger)
	}
}
