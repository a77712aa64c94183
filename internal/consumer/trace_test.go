package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// A message without trace context (sent by a version before it), or with
// one this version cannot read, is processed all the same: its item span
// is a root linked to nothing.
func TestMessageWithoutTraceContextProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tp, rec := telemetrytest.Recorder(t)
	b.consumer.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp})
	values := map[string]string{ // asset → its baton-trace attribute ("-": none)
		"EURUSD": "-",
		"GBPUSD": "2;00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", // a later version
		"USDJPY": "1;not a traceparent",
		"USDCAD": "1;00-00000000000000000000000000000000-0000000000000000-01", // invalid ids
		"USDSEK": "",
	}
	batch := b.deliveries()
	for asset, v := range values {
		m := b.message(asset)
		if v != "-" {
			m.Attributes[telemetry.AttrTrace] = v
		}
		batch = append(batch, b.deliveries(m)...)
	}
	res := b.consumer.Handle(context.Background(), time.Time{}, batch)
	require.Empty(t, res.Failed)
	for _, o := range res.Items {
		require.Equal(t, consumer.StatusSucceeded, o.Status, o.Key)
	}
	spans := telemetrytest.Named(rec, telemetry.SpanItem)
	require.Len(t, spans, len(values))
	for _, s := range spans {
		require.Empty(t, s.Links(), telemetrytest.Attr(s, string(telemetry.KeyItem)))
		require.False(t, s.Parent().IsValid(), "a root span")
		require.Equal(t, consumer.StatusSucceeded, telemetrytest.Attr(s, string(telemetry.KeyOutcome)))
	}
}

// The processor runs inside the item's span: its own spans nest under it.
// Under a span of the caller (a Lambda invocation's), the item span is
// its child, linked to the run's span its message carries.
func TestProcessorRunsInTheItemSpan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tp, rec := telemetrytest.Recorder(t)
	b.consumer.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp})
	var seen trace.SpanContext
	b.proc.setOverride(func(ctx context.Context, task baton.Task) ([]byte, error, bool) {
		seen = trace.SpanContextFromContext(ctx)
		_, own := tp.Tracer("user").Start(ctx, "user.fetch")
		own.End()
		return nil, nil, false
	})
	runCtx, run := tp.Tracer("test").Start(context.Background(), "run")
	run.End()
	m := b.message("EURUSD")
	msgs := []queue.Message{m}
	telemetry.Stamp(runCtx, msgs)
	ctx, invocation := tp.Tracer("test").Start(context.Background(), "invocation")
	res := b.consumer.Handle(ctx, time.Time{}, b.deliveries(msgs...))
	invocation.End()
	require.Empty(t, res.Failed)

	items := telemetrytest.Named(rec, telemetry.SpanItem)
	require.Len(t, items, 1)
	item := items[0]
	require.Equal(t, telemetrytest.ID(item.SpanContext()), telemetrytest.ID(seen), "the processor's context holds the item span")
	user := telemetrytest.Named(rec, "user.fetch")
	require.Len(t, user, 1)
	require.Equal(t, telemetrytest.ID(item.SpanContext()), telemetrytest.ID(user[0].Parent()))
	require.Equal(t, telemetrytest.ID(invocation.SpanContext()), telemetrytest.ID(item.Parent()), "a child of the caller's span")
	require.Len(t, item.Links(), 1)
	require.Equal(t, telemetrytest.ID(run.SpanContext()), telemetrytest.ID(item.Links()[0].SpanContext), "linked to the run")
	allowed := []attribute.Key{telemetry.KeyJob, telemetry.KeyRun, telemetry.KeyItem, telemetry.KeyAttempt, telemetry.KeyFence,
		telemetry.KeyOutcome, telemetry.KeyMessage, telemetry.KeyReceive}
	for _, k := range allowed[:5] {
		require.NotEmpty(t, telemetrytest.Attr(item, string(k)), k)
	}
	for _, kv := range item.Attributes() { // never a payload or a result
		require.Contains(t, allowed, kv.Key)
	}
}

// A derived item's message carries the span of the input whose end made
// it ready: DXY's span links to that input's item span.
func TestDerivedItemLinksToTheInputThatEnqueuedIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tp, rec := telemetrytest.Recorder(t)
	b.consumer.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp})
	b.drain(t, b.deliveries(b.fanOut()...))
	require.Equal(t, ledger.ItemSucceeded, b.item(t, fx.DXY).State)

	byKey := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range telemetrytest.Named(rec, telemetry.SpanItem) {
		k := telemetrytest.Attr(s, string(telemetry.KeyItem))
		byKey[k] = append(byKey[k], s)
	}
	dxy := byKey[b.key(fx.DXY).String()]
	require.NotEmpty(t, dxy)
	for _, d := range dxy {
		require.Len(t, d.Links(), 1)
		from := ""
		for _, in := range fx.DXYInputs {
			for _, s := range byKey[b.key(in).String()] {
				if telemetrytest.ID(s.SpanContext()) == telemetrytest.ID(d.Links()[0].SpanContext) {
					from = in
				}
			}
		}
		require.NotEmpty(t, from, "DXY links to one of its inputs")
	}
}
