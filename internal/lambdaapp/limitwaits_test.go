package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/ratelimit"
)

// Messages given back by a busy key are counted as LimitWaits, one record
// per limit with the limit's name as a dimension; the key, which is data
// of no bound, is no dimension and appears nowhere in the metrics.
func TestConsumerCountsLimitWaitsByLimitName(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	const hostKey = "feeds.example.com/secret-path"
	job := baton.Job{Name: "lim", Schedule: "rate(1 minute)", Assets: []string{"h1", "h2"},
		RateLimits: []baton.RateLimit{{Name: "per-host", InFlight: 1, Keyed: true, PerItem: true,
			Key: func(baton.Task) string { return hostKey }}},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	ctx := context.Background()
	run, _, err := b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "lim", Nominal: tick, Fence: 1, Now: tick})
	require.NoError(t, err)
	_, err = b.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 2, Done: true, Now: tick})
	require.NoError(t, err)
	now := fixedAt.Add(time.Hour)
	require.NoError(t, b.RateLimits.Hold(ctx, ratelimit.SlotParams{Name: ratelimit.KeyedName("per-host", hostKey), Slot: 0,
		Holder: "elsewhere", Until: now.Add(time.Hour), Now: now}))

	var metrics bytes.Buffer
	p := params(b, func() time.Time { return now })
	p.Jobs, p.RateLimits, p.Metrics = cat, b.RateLimits, &metrics
	h, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	var ev events.SQSEvent
	for _, a := range job.Assets {
		m := message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: a, Body: string(m.Encode())})
	}
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 2, "both given back")

	var waits []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if _, ok := rec["LimitWaits"]; ok {
			waits = append(waits, rec)
		}
	}
	require.Len(t, waits, 1, metrics.String())
	require.EqualValues(t, 2, waits[0]["LimitWaits"])
	require.Equal(t, "per-host", waits[0]["Limit"])
	require.Equal(t, "lim", waits[0]["Job"])
	require.Contains(t, metrics.String(), `"Dimensions":[["Job","Limit","service"]]`)
	require.NotContains(t, metrics.String(), "feeds.example.com", "a key is never in a metric")
}
