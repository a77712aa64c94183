package schedule

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// checkAround checks the contract of Next and Prev around t: Prev(t) <= t <
// Next(t), no tick strictly between them, both on whole minutes, and a
// tick is its own Prev.
func checkAround(t testing.TB, s Schedule, at time.Time) {
	t.Helper()
	next, prev := s.Next(at), s.Prev(at)
	if !next.IsZero() {
		require.True(t, next.After(at), "%s: Next(%s) = %s", s, at, next)
		require.Equal(t, next, s.Prev(next), "%s: Prev(Next(%s))", s, at)
		require.Zero(t, next.Second()+next.Nanosecond(), "%s: Next(%s) = %s", s, at, next)
		require.Equal(t, time.UTC, next.Location())
	}
	if !prev.IsZero() {
		require.False(t, prev.After(at), "%s: Prev(%s) = %s", s, at, prev)
		require.Equal(t, next, s.Next(prev), "%s: a tick between Prev(%s) = %s and Next = %s", s, at, prev, next)
		require.Zero(t, prev.Second()+prev.Nanosecond(), "%s: Prev(%s) = %s", s, at, prev)
		require.Equal(t, time.UTC, prev.Location())
	}
}

// brutePrev finds the latest tick at or before t by walking Next forward
// from gap (the longest stretch without a tick) before t.
func brutePrev(s Schedule, t time.Time, gap time.Duration) (last time.Time) {
	hi := t
	if _, ok := s.eng.(*cron); ok && !hi.Before(cronEnd) {
		hi = cronEnd
	}
	for x := s.Next(hi.Add(-gap - time.Minute)); !x.IsZero() && !x.After(t); x = s.Next(x) {
		last = x
	}
	return last
}

func TestPrevMatchesBruteForce(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	tests := []struct {
		expr string
		gap  time.Duration
	}{
		{"rate(1 minute)", time.Minute},
		{"rate(90 minutes)", 90 * time.Minute},
		{"rate(7 days)", 7 * day},
		{"cron(* * * * ? *)", time.Minute},
		{"cron(0/15 * * * ? *)", 15 * time.Minute},
		{"cron(0/5 8-17 ? * MON-FRI *)", 4 * day},
		{"cron(0 10 * * ? *)", day},
		{"cron(0 18 ? * MON-FRI *)", 4 * day},
		{"cron(0 9 ? * 2#1 *)", 36 * day},
		{"cron(0 0 ? * 2#5 *)", 200 * day},
		{"cron(0 0 L * ? *)", 32 * day},
		{"cron(0 0 LW * ? *)", 35 * day},
		{"cron(0 0 ? * 6L *)", 36 * day},
		{"cron(0 0 1W * ? *)", 35 * day},
		{"cron(59 23 31 12 ? *)", 367 * day},
		{"cron(0 0 29 2 ? *)", 9 * 366 * day},
		{"cron(0 12 1 1 ? 2030)", 200 * 366 * day},
		{"cron(15,45 1,13 ? JAN,JUL SUN#2 1999-2001,2050)", 160 * 366 * day},
		{"cron(0 6 ? * MON#1 2099-2101,2150)", 50 * 366 * day},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	lo := time.Date(1969, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	hi := time.Date(2199, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, tt := range tests {
		s := mustParse(t, tt.expr)
		instants := []time.Time{
			cronStart, cronStart.Add(-time.Nanosecond), cronEnd, cronEnd.Add(-time.Nanosecond),
			at(t, "2028-02-29T00:00"), at(t, "2026-05-15T12:01:07"),
		}
		for range 150 {
			instants = append(instants, time.Unix(0, lo+rng.Int64N(hi-lo)).UTC())
		}
		// Ticks themselves, and the instants either side of them.
		for _, x := range instants[:10] {
			if n := s.Next(x); !n.IsZero() {
				instants = append(instants, n, n.Add(-time.Nanosecond), n.Add(time.Nanosecond))
			}
		}
		for _, x := range instants {
			require.Equal(t, brutePrev(s, x, tt.gap), s.Prev(x), "%s: Prev(%s)", tt.expr, x)
			checkAround(t, s, x)
		}
	}
}

func BenchmarkNext(b *testing.B) {
	for _, expr := range []string{"rate(5 minutes)", "cron(0/5 8-17 ? * MON-FRI *)", "cron(0 9 ? * 2#1 *)"} {
		s := mustParse(b, expr)
		t0 := time.Date(2026, 5, 15, 12, 0, 30, 0, time.UTC)
		b.Run(expr, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s.Next(t0.Add(time.Duration(i%100000) * time.Minute))
			}
		})
	}
}

func BenchmarkPrev(b *testing.B) {
	for _, expr := range []string{"rate(5 minutes)", "cron(0/5 8-17 ? * MON-FRI *)", "cron(0 10 * * ? *)", "cron(0 9 ? * 2#1 *)", "cron(0 0 29 2 ? *)"} {
		s := mustParse(b, expr)
		t0 := time.Date(2026, 5, 15, 12, 0, 30, 0, time.UTC)
		b.Run(expr, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s.Prev(t0.Add(time.Duration(i%100000) * time.Minute))
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, expr := range []string{"rate(5 minutes)", "cron(0/5 8-17 ? * MON-FRI *)", "cron(0 0 29 2 ? *)"} {
		b.Run(expr, func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(expr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
