package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLatencySeconds(t *testing.T) {
	t.Parallel()
	lat := Latency{PerCall: map[string]time.Duration{"DynamoDB": 10 * time.Millisecond, "SQS": 20 * time.Millisecond}, VCPU: 0.5}
	inv := invocations{N: 2, Own: 30 * time.Millisecond, Chain: map[string]int{"DynamoDB": 8, "SQS": 1, "S3": 1}}
	// own 30 ms ÷ 0.5 vCPU + 8 × 10 ms + 1 × 20 ms + 1 × 20 ms (an unknown
	// service takes the largest latency) + 2 × 1 ms of rounding
	require.InDelta(t, 0.060+0.080+0.020+0.020+0.002, lat.Seconds(inv), 1e-9)
}

func TestPerMillion(t *testing.T) {
	t.Parallel()
	p := Prices{WriteUnit: 1e-6, ReadUnit: 2e-6, SQSRequest: 3e-6, LambdaRequest: 4e-6, LambdaGBSecond: 5e-6}
	u := Usage{Items: 1000, WriteUnits: 2000, ReadUnits: 500, SQSRequests: 300, LambdaRequests: 101, LambdaSeconds: 10, LambdaMemoryGB: 0.25}
	lines := p.PerMillion(u)
	got := map[string]float64{}
	for _, l := range lines {
		got[l.Part] = l.Dollars
	}
	// per million items: 1,000 × each count
	require.InDelta(t, 2.0, got["DynamoDB writes"], 1e-9)
	require.InDelta(t, 1.0, got["DynamoDB reads"], 1e-9)
	require.InDelta(t, 0.9, got["SQS requests"], 1e-9)
	require.InDelta(t, 0.404, got["Lambda requests"], 1e-9)
	require.InDelta(t, 0.0125, got["Lambda GB-seconds"], 1e-9)
	require.InDelta(t, 2.0+1.0+0.9+0.404+0.0125, Sum(lines), 1e-9)
}

func TestBatonUsageAndCostRows(t *testing.T) {
	t.Parallel()
	run := awsRun{n: 100, calls: map[string]int{"ReceiveMessage": 30, "PutItem": 100}, sqsRequests: 45}
	run.stats.WriteUnits, run.stats.ReadUnits = 203, 50
	run.timed = invocations{N: 11, Billed: 11 * time.Second, Own: 11 * 5 * time.Millisecond,
		Chain: map[string]int{"DynamoDB": 44}, Calls: map[string]int{"DynamoDB": 400, "SQS": 10}}

	measured := BatonUsage(run, nil)
	require.Equal(t, 45, measured.SQSRequests, "SQS as billed, not as called")
	require.Equal(t, 11, measured.LambdaRequests)
	require.InDelta(t, 11.0, measured.LambdaSeconds, 1e-9)
	lat := AWSLatency
	atAWS := BatonUsage(run, &lat)
	require.InDelta(t, 11*(0.005/lat.VCPU+4*0.010+0.001), atAWS.LambdaSeconds, 1e-9)
	require.Less(t, atAWS.LambdaSeconds, measured.LambdaSeconds)

	r := &Runner{}
	r.addCost("aws", run, perItemMode)
	rows := r.Rows()
	require.Len(t, rows, 6+len(Anchors(atAWS)))
	require.Nil(t, rows[0].Goal, "per-item mode is kept beside the goal line, not judged")
	require.InDelta(t, 0.45, rows[4].Value, 1e-9, "SQS requests per item as billed")

	r = &Runner{}
	r.addCost("aws", run, bulkMode)
	rows = r.Rows()
	require.Len(t, rows, 6, "the anchors are priced once, from per-item mode")
	judged := rows[0]
	require.Contains(t, judged.Figure, "bulk mode")
	require.NotNil(t, judged.Goal, "the goal line is bulk mode's figure at AWS latency")
	require.InDelta(t, Sum(ListPrices.PerMillion(atAWS)), judged.Value, 1e-9)
	require.Nil(t, rows[1].Goal, "the emulators' time is an upper bound, not judged")
	require.InDelta(t, Sum(ListPrices.PerMillion(measured)), rows[1].Value, 1e-9)
	require.Greater(t, rows[1].Value, judged.Value)
}
