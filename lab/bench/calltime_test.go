package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimingOwnTimeAndChain(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	ct := &callTimes{calls: []timedCall{
		{start: ms(55), end: ms(80), service: "DynamoDB"},
		{start: ms(10), end: ms(30), service: "DynamoDB"},
		{start: ms(20), end: ms(40), service: "DynamoDB"}, // beside the one before
		{start: ms(50), end: ms(60), service: "SQS"},
	}}
	inv := timing(t0, ms(100.2), ct)
	require.Equal(t, 100200*time.Microsecond, inv.Wall)
	require.Equal(t, 101*time.Millisecond, inv.Billed, "rounded up to the millisecond")
	require.Equal(t, 40200*time.Microsecond, inv.Own, "the wall time less [10, 40] and [50, 80]")
	require.Equal(t, map[string]int{"DynamoDB": 1, "SQS": 1}, inv.Chain, "10–30 then 50–60: the others overlap one of them")
	require.Equal(t, map[string]int{"DynamoDB": 3, "SQS": 1}, inv.Calls)

	seq := &callTimes{calls: []timedCall{
		{start: ms(0), end: ms(10), service: "DynamoDB"},
		{start: ms(10), end: ms(20), service: "DynamoDB"},
		{start: ms(25), end: ms(30), service: "DynamoDB"},
	}}
	inv = timing(t0, ms(30), seq)
	require.Equal(t, 3, inv.Chain["DynamoDB"], "calls in sequence are all on the chain")
	require.Equal(t, 5*time.Millisecond, inv.Own)
	require.Equal(t, 30*time.Millisecond, inv.Billed)

	var sum invocations
	sum.add(timing(t0, ms(100.2), ct))
	sum.add(inv)
	require.Equal(t, 2, sum.N)
	require.Equal(t, 131*time.Millisecond, sum.Billed)
	require.Equal(t, map[string]int{"DynamoDB": 4, "SQS": 1}, sum.Chain)
}
