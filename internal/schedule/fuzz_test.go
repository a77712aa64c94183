package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fuzzSpan is where fuzzed instants fall: 1960 to 2110, a margin either
// side of the years cron ticks are computed in.
var (
	fuzzFrom = time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	fuzzSpan = time.Date(2110, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - fuzzFrom
)

func fuzzTime(sec, nsec int64) time.Time {
	return time.Unix(fuzzFrom+mod(sec, fuzzSpan), mod(nsec, int64(time.Second))).UTC()
}

func mod(a, b int64) int64 {
	if m := a % b; m >= 0 {
		return m
	}
	return a%b + b
}

// FuzzParse checks that Parse never panics, that its errors are ParseErrors,
// and that for any valid schedule Prev(t) <= t < Next(t), with no tick
// between them and Prev(Next(t)) == Next(t).
func FuzzParse(f *testing.F) {
	for _, expr := range []string{
		"rate(1 minute)", "rate(5 minutes)", "rate(1 hour)", "rate(7 days)", "rate(1 minutes)", "rate(0 days)",
		"cron(0 10 * * ? *)", "cron(15 12 * * ? *)", "cron(0 18 ? * MON-FRI *)", "cron(0 8 1 * ? *)",
		"cron(0/15 * * * ? *)", "cron(0/10 * ? * MON-FRI *)", "cron(0/5 8-17 ? * MON-FRI *)",
		"cron(0 9 ? * 2#1 *)", "cron(0 0 L * ? *)", "cron(0 0 ? * 6L *)", "cron(0 0 LW * ? *)",
		"cron(0 0 15W * ? *)", "cron(0 0 ? * L *)", "cron(30 22-2 * * ? 2026-2030)",
		"cron(0 12 ? * FRI-MON *)", "cron(0 0 29 2 ? *)", "cron(0 0 1 1 ? 2099-2199)",
		"cron(0 0 ? * 9 *)", "cron(0 0 * * * *)", "cron(0 0 30 2 ? *)", "cron(0 0 L-2 * ? *)",
		"cron(*/0 * * * ? *)", "cron(0 0 ? * 3#1,6#3 *)", "cron(,)", "cron(0 0 ? * # *)", "",
	} {
		f.Add(expr, int64(1778846430), int64(0))
	}
	f.Fuzz(func(t *testing.T, expr string, sec, nsec int64) {
		s, err := Parse(expr)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, expr, pe.Expr)
			require.NotEmpty(t, err.Error())
			require.Equal(t, Schedule{}, s)
			return
		}
		require.Equal(t, expr, s.String())
		at := fuzzTime(sec, nsec)
		checkAround(t, s, at)
		if next := s.Next(at); !next.IsZero() {
			checkAround(t, s, next)
			checkAround(t, s, next.Add(-time.Nanosecond))
		}
	})
}
