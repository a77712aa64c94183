package bench

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMarkdown(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{Scenario: "1 calls", Backend: "aws", Figure: "acquire", Value: 2, Reference: 1, RefText: "1 write", Unit: Count, Note: "GetItem 1, UpdateItem 1"},
		{Scenario: "3 fan-out", Backend: "sqlite", Figure: "a|b", Value: 8500, Reference: 10000, Unit: Rate, Goal: RatioAtLeast(0.8)},
		{Scenario: "4 end to end", Backend: "sqlite", Figure: "e2e", Value: 4000, Reference: 10000, Unit: Rate, Goal: RatioAtLeast(0.5)},
		{Scenario: "5 freshness", Backend: "aws", Figure: "tick", Value: 1.734, Reference: 11.2, Unit: Duration, Goal: AtMost(2.5, Duration)},
		{Scenario: "2 lease", Backend: "aws", Figure: "p50", Value: 0.000842, Reference: 0.0000123, Unit: Duration},
		{Scenario: "6 lambda", Backend: "lambda", Figure: "size", Value: 10 << 20, Reference: 0, Unit: Bytes},
	}
	var b bytes.Buffer
	require.NoError(t, Markdown(&b, rows))
	want := "| # | backend | figure | value | reference | ratio | goal |\n" +
		"|---|---|---|--:|---|--:|---|\n" +
		"| 1 calls | aws | acquire | 2 (GetItem 1, UpdateItem 1) | 1 — 1 write | 200 % | — |\n" +
		"| 3 fan-out | sqlite | a\\|b | 8,500 /s | 10,000 /s | 85.0 % | ≥ 80 % ✅ met |\n" +
		"| 4 end to end | sqlite | e2e | 4,000 /s | 10,000 /s | 40.0 % | ≥ 50 % ❌ missed |\n" +
		"| 5 freshness | aws | tick | 1.73 s | 11.20 s | 15.5 % | ≤ 2.50 s ✅ met |\n" +
		"| 2 lease | aws | p50 | 842 µs | 12.3 µs | 6846 % | — |\n" +
		"| 6 lambda | lambda | size | 10.0 MiB | 0.0 MiB | — | — |\n"
	require.Equal(t, want, b.String())
}

func TestGoalsMarkdown(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{Scenario: "1 calls", Backend: "aws", Figure: "acquire", Value: 2, Reference: 1, Unit: Count},
		{Scenario: "3 fan-out", Backend: "sqlite", Figure: "a|b", Value: 8500, Reference: 10000, Unit: Rate, Goal: RatioAtLeast(0.8)},
		{Scenario: "9 cost", Backend: "aws", Figure: "$", Value: 1.91, Reference: 1.5, Unit: Count, Goal: AtMost(1.5, Count), Note: "writes $1.27"},
	}
	var b bytes.Buffer
	require.NoError(t, GoalsMarkdown(&b, rows))
	want := "| # | backend | figure | value | goal | result |\n" +
		"|---|---|---|--:|---|---|\n" +
		"| 3 fan-out | sqlite | a\\|b | 8,500 /s = 85.0 % of 10,000 /s | ≥ 80 % | ✅ met |\n" +
		"| 9 cost | aws | $ | 1.91 (writes $1.27) | ≤ 1.50 | ❌ not met |\n"
	require.Equal(t, want, b.String())
}

func TestSamplesPercentile(t *testing.T) {
	t.Parallel()
	var s Samples
	require.True(t, math.IsNaN(s.Percentile(50)))
	for i := 100; i >= 1; i-- {
		s.Add(durationMs(i))
	}
	require.InDelta(t, 0.050, s.Percentile(50), 1e-9)
	require.InDelta(t, 0.099, s.Percentile(99), 1e-9)
	require.InDelta(t, 0.100, s.Percentile(100), 1e-9)
	require.InDelta(t, 0.001, s.Percentile(0.1), 1e-9)
}

func TestSortRowsKeepsOrderWithinAScenario(t *testing.T) {
	t.Parallel()
	rows := SortRows([]Row{{Scenario: "3 fan-out", Figure: "a"}, {Scenario: "1 calls", Figure: "b"}, {Scenario: "1 calls", Figure: "c"}})
	require.Equal(t, []string{"b", "c", "a"}, []string{rows[0].Figure, rows[1].Figure, rows[2].Figure})
}

func durationMs(n int) time.Duration { return time.Duration(n) * time.Millisecond }
