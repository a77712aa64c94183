package consumer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
	"github.com/batonhq/baton/internal/telemetry"
)

// discard is a span processor that drops what it is given: the cost of
// recording, without an exporter's.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }

// telemetries are the benchmarks' cases: the global providers with none
// installed (a user who configures nothing), explicit no-op providers,
// and recording ones (every span sampled, the metrics aggregated).
func telemetries(b *testing.B) []struct {
	name string
	tel  *telemetry.Telemetry
} {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(discard{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"global", nil},
		{"noop", telemetry.New(telemetry.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})},
		{"recording", telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Engine: "sqlite"})},
	}
}

// BenchmarkHandleTelemetry is the consumer's whole path for one item
// message (vouch, claim, process, complete, settle on SQLite), one item
// per op, under each telemetry: allocs/op is allocations per item, and
// the difference between the cases is what tracing costs. The messages
// carry the run's trace context, as a traced coordinator's do.
func BenchmarkHandleTelemetry(b *testing.B) {
	const runItems = 500
	assets := make([]string, runItems)
	for i := range assets {
		assets[i] = fmt.Sprintf("a%03d", i)
	}
	job := baton.Job{Name: "bench", Schedule: "rate(1 minute)", Assets: assets,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("1"), nil })}
	cat := baton.MustCatalog(job)
	runCtx := traceContext()
	for _, tc := range telemetries(b) {
		b.Run(tc.name, func(b *testing.B) {
			db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "baton.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			led := sqlite.NewLedgerStore(db)
			c := &consumer.Consumer{Ledger: led, Queue: &memQueue{}, Jobs: cat, Effects: sqlite.NewEffectStore(db), Owner: "bench",
				Runs: &consumer.RunCache{}, Telemetry: tc.tel}
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-24 * time.Hour)
			var batch []queue.Delivery
			n := 0
			next := func() {
				// A fresh run every runItems items, its messages stamped
				// with the run's span.
				b.StopTimer()
				defer b.StartTimer()
				nominal = nominal.Add(time.Minute)
				run, _, err := led.OpenRun(b.Context(), ledger.OpenRunParams{Job: "bench", Nominal: nominal, Fence: 1, Now: nominal})
				if err == nil {
					_, err = led.AdvanceRun(b.Context(), ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: runItems, Done: true, Now: nominal})
				}
				if err != nil {
					b.Fatal(err)
				}
				msgs := make([]queue.Message, runItems)
				for i, a := range assets {
					msgs[i] = message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false).QueueMessage()
				}
				telemetry.Stamp(runCtx, msgs)
				batch = batch[:0]
				for i, m := range msgs {
					batch = append(batch, queue.Delivery{MessageID: fmt.Sprint(n + i), Body: m.Body, Attributes: m.Attributes, ReceiveCount: 1})
				}
			}
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if n%runItems == 0 {
					next()
				}
				res := c.Handle(ctx, time.Time{}, batch[n%runItems:n%runItems+1])
				if len(res.Failed) > 0 {
					b.Fatal(res.Failed[0].Err)
				}
				n++
			}
		})
	}
}

// traceContext is a context whose span is a sampled remote one, as a
// traced coordinator's run span.
func traceContext() context.Context {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	return trace.ContextWithSpanContext(context.Background(), sc)
}
