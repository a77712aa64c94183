package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

var sc = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
	SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
	TraceFlags: trace.FlagsSampled,
})

func TestStampAndExtract(t *testing.T) {
	t.Parallel()
	shared := map[string]string{"baton-key": "k"}
	msgs := []queue.Message{{Attributes: shared}, {}, {Attributes: map[string]string{telemetry.AttrTrace: "kept"}}}
	telemetry.Stamp(trace.ContextWithSpanContext(context.Background(), sc), msgs)

	require.Equal(t, "1;00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", msgs[0].Attributes[telemetry.AttrTrace])
	require.Equal(t, "k", msgs[0].Attributes["baton-key"])
	require.NotContains(t, shared, telemetry.AttrTrace, "a shared attribute map is copied, not written")
	require.Equal(t, msgs[0].Attributes[telemetry.AttrTrace], msgs[1].Attributes[telemetry.AttrTrace])
	require.Equal(t, "kept", msgs[2].Attributes[telemetry.AttrTrace], "a copy of a received message keeps its context")

	got, ok := telemetry.Extract(msgs[0].Attributes)
	require.True(t, ok)
	require.Equal(t, sc.TraceID(), got.TraceID())
	require.Equal(t, sc.SpanID(), got.SpanID())
	require.True(t, got.IsSampled())
	require.True(t, got.IsRemote())
}

func TestStampWithoutSpanDoesNothing(t *testing.T) {
	t.Parallel()
	msgs := []queue.Message{{Attributes: map[string]string{"baton-key": "k"}}}
	telemetry.Stamp(context.Background(), msgs)
	require.Equal(t, map[string]string{"baton-key": "k"}, msgs[0].Attributes)
}

func TestStampCarriesTheTraceState(t *testing.T) {
	t.Parallel()
	ts, err := trace.ParseTraceState("vendor=a;b,other=c")
	require.NoError(t, err)
	msgs := []queue.Message{{}}
	telemetry.Stamp(trace.ContextWithSpanContext(context.Background(), sc.WithTraceState(ts)), msgs)
	got, ok := telemetry.Extract(msgs[0].Attributes)
	require.True(t, ok)
	require.Equal(t, ts.String(), got.TraceState().String())
}

// The origin (the coordinator's invocation span) wins over the span a
// message is sent under (a fan-out step's).
func TestStampUsesTheOrigin(t *testing.T) {
	t.Parallel()
	ctx := telemetry.WithOrigin(trace.ContextWithSpanContext(context.Background(), sc))
	step := trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc.TraceID(), SpanID: trace.SpanID{1}})
	msgs := []queue.Message{{}}
	telemetry.Stamp(trace.ContextWithSpanContext(ctx, step), msgs)
	got, ok := telemetry.Extract(msgs[0].Attributes)
	require.True(t, ok)
	require.Equal(t, sc.SpanID(), got.SpanID())
}

func TestExtractRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]string{
		"empty":           "",
		"no version":      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"later version":   "2;00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"not traceparent": "1;garbage",
		"zero ids":        "1;00-00000000000000000000000000000000-0000000000000000-01",
	} {
		_, ok := telemetry.Extract(map[string]string{telemetry.AttrTrace: v})
		require.False(t, ok, name)
	}
	_, ok := telemetry.Extract(nil)
	require.False(t, ok)
}

func TestCarry(t *testing.T) {
	t.Parallel()
	msgs := []queue.Message{{Attributes: map[string]string{"a": "b"}}}
	telemetry.Carry(map[string]string{"x": "y"}, msgs)
	require.Equal(t, map[string]string{"a": "b"}, msgs[0].Attributes, "nothing to carry")
	telemetry.Carry(map[string]string{telemetry.AttrTrace: "1;v"}, msgs)
	require.Equal(t, map[string]string{"a": "b", telemetry.AttrTrace: "1;v"}, msgs[0].Attributes)
}

// The metrics carry the job, the outcome and the engine, and nothing for
// what is unknown (a malformed message's job).
func TestMetricAttributes(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	tel := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Engine: "aws"})
	ctx := context.Background()
	tel.Item(ctx, "fx", "succeeded")
	tel.Item(ctx, "fx", "succeeded")
	tel.Item(ctx, "", "malformed")
	tel.Invocation(ctx, "fx", "skipped", true)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				got[m.Name+" "+p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
			}
		}
	}
	require.Equal(t, map[string]int64{
		"baton.items baton.engine=aws,baton.job=fx,baton.outcome=succeeded":                 2,
		"baton.items baton.engine=aws,baton.outcome=malformed":                              1,
		"baton.coordinator.invocations baton.engine=aws,baton.job=fx,baton.outcome=skipped": 1,
		"baton.lease.contention baton.engine=aws,baton.job=fx":                              1,
	}, got)
}

// counted is a queue.Counter with a fixed depth, or a failing count.
type counted struct {
	d   queue.Depth
	err error
}

func (c counted) Depth(context.Context) (queue.Depth, error) { return c.d, c.err }

// The queue depth gauge: one data point per queue that could count, its
// every message, with the queue's name and the engine as its only
// attributes; none after stop.
func TestObserveQueueDepths(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel := telemetry.New(telemetry.Options{MeterProvider: mp, Engine: "sqlite"})
	stop := tel.ObserveQueueDepths([]telemetry.CountedQueue{
		{Name: "work", Counter: counted{d: queue.Depth{Visible: 3, InFlight: 2, Delayed: 1}}},
		{Name: "work-dlq", Counter: counted{d: queue.Depth{Visible: 4}}},
		{Name: "job-broken", Counter: counted{err: context.DeadlineExceeded}},
	})
	collect := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "baton.queue.depth" {
					continue
				}
				for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					require.Equal(t, 2, p.Attributes.Len(), "the queue and the engine only")
					engine, _ := p.Attributes.Value(telemetry.KeyEngine)
					require.Equal(t, "sqlite", engine.AsString())
					q, _ := p.Attributes.Value(telemetry.KeyQueue)
					out[q.AsString()] = p.Value
				}
			}
		}
		return out
	}
	require.Equal(t, map[string]int64{"work": 6, "work-dlq": 4}, collect())
	stop()
	require.Empty(t, collect())
}

// A run record keeps the trace id of a sampled span only: an unsampled
// one's trace is nowhere to be seen.
func TestTraceID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", telemetry.TraceID(trace.ContextWithSpanContext(context.Background(), sc)))
	unsampled := sc.WithTraceFlags(0)
	require.Empty(t, telemetry.TraceID(trace.ContextWithSpanContext(context.Background(), unsampled)))
	require.Empty(t, telemetry.TraceID(context.Background()))
}
