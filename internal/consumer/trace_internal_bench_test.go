package consumer

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

// BenchmarkItemInstrumentation is the instrumentation alone of one item
// that succeeds, as handle and its steps run it (the item span, its
// vouch, claim and complete steps, the claim latency, the item count and
// tick-to-done), without the store calls: allocs/op is what tracing adds
// per item, none being 0 by construction.
func BenchmarkItemInstrumentation(b *testing.B) {
	run := ledger.RunID{Job: fx.Name, Nominal: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Generation: 1}
	key := ledger.ItemKey{Run: run, Asset: "EURUSD"}
	m := message.New(key, 1, false)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	carried := []queue.Message{m.QueueMessage()}
	telemetry.Stamp(trace.ContextWithSpanContext(context.Background(), sc), carried)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(dropSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	for _, tc := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"global", nil},
		{"noop", telemetry.New(telemetry.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})},
		{"recording", telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Engine: "sqlite"})},
	} {
		for _, attrs := range []struct {
			name  string
			attrs map[string]string
		}{{"plain", m.QueueMessage().Attributes}, {"carried", carried[0].Attributes}} {
			b.Run(tc.name+"/"+attrs.name, func(b *testing.B) {
				c := &Consumer{Telemetry: tc.tel}
				d := &delivery{d: queue.Delivery{MessageID: "m1", ReceiveCount: 1, Attributes: attrs.attrs}, msg: m, key: key, job: fx.Job(nil)}
				v := verdict{outcome: MessageOutcome{MessageID: "m1", Key: m.Key, Asset: "EURUSD", Status: StatusSucceeded, Attempt: 1, Fence: 1, TickToDone: time.Second}}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					ictx, span := c.startItem(ctx, d)
					_, s := c.stepSpan(ictx, telemetry.SpanVouch)
					telemetry.End(s, "", nil)
					_, s = c.stepSpan(ictx, telemetry.SpanClaim)
					c.claimed(ictx, d.job.Name, time.Millisecond)
					telemetry.End(s, "claimed", nil)
					_, s = c.stepSpan(ictx, telemetry.SpanComplete)
					telemetry.End(s, StatusSucceeded, nil)
					c.endItem(ictx, span, d, v)
				}
			})
		}
	}
}
