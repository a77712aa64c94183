// Package telemetrytest checks baton's traces end to end on a backend,
// the same way on every engine: one tick of the reference job (examples/fx)
// run by an engine whose telemetry records into OpenTelemetry's in-memory
// span recorder yields a coordinator span, an item span per item linked to
// it (the derived DXY linked to the input whose end enqueued it), each
// item's steps nested under its span; a redelivered duplicate is a span of
// its own with outcome duplicate.
package telemetrytest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// Recorder returns a tracer provider that records every span it ends into
// the returned recorder, shut down with the test.
func Recorder(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// Attr returns span's attribute k as a string ("" when it has none).
func Attr(span sdktrace.ReadOnlySpan, k string) string {
	for _, kv := range span.Attributes() {
		if string(kv.Key) == k {
			return kv.Value.String()
		}
	}
	return ""
}

// Named returns the ended spans called name.
func Named(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Run runs one tick of the reference job on b and checks its trace; see
// the package documentation.
func Run(t *testing.T, b backend.Backend) {
	tp, rec := Recorder(t)
	Trace(t, b, tp, rec)
}

// Traced are the spans of the tick Trace checked.
type Traced struct {
	Coordinator sdktrace.ReadOnlySpan
	Items       map[string]sdktrace.ReadOnlySpan // the succeeded item spans, by asset
}

// Trace is Run with the tracer provider and its recorder given: a
// backend opened with tp (its store's own spans recorded too).
func Trace(t *testing.T, b backend.Backend, tp trace.TracerProvider, rec *tracetest.SpanRecorder) Traced {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	e, err := exec.New(b, exec.Options{
		Catalog: fx.Catalog(&fx.Options{Latency: time.Millisecond}), Consumers: 2, BatchSize: 4,
		RetryDelay: 50 * time.Millisecond,
		Telemetry:  telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Engine: b.Name}),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	sum, err := e.Trigger(t.Context(), "fx", time.Now(), false)
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	waitCtx, stop := context.WithTimeout(t.Context(), 2*time.Minute)
	defer stop()
	run, _, err := e.WaitSettled(waitCtx, "fx", sum.Nominal, 0)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)

	// The coordinator's invocation: its steps are its children.
	var coord sdktrace.ReadOnlySpan
	for _, s := range Named(rec, telemetry.SpanCoordinator) {
		if Attr(s, string(telemetry.KeyRun)) == run.ID.String() && Attr(s, string(telemetry.KeyKind)) == "trigger" {
			require.Nil(t, coord, "one trigger invocation for the run")
			coord = s
		}
	}
	require.NotNil(t, coord, "a coordinator span for run %s", run.ID)
	require.Equal(t, string(coordinator.OutcomeOpened), Attr(coord, string(telemetry.KeyOutcome)))
	require.Equal(t, "7", Attr(coord, string(telemetry.KeyEnqueue)))
	require.Equal(t, "fx", Attr(coord, string(telemetry.KeyJob)))
	require.Equal(t, coord.SpanContext().TraceID().String(), run.TraceID, "the run record keeps the trace of the span that opened it")
	for _, step := range []string{telemetry.SpanLease, telemetry.SpanOpen, telemetry.SpanFanOut, telemetry.SpanRelease} {
		require.Len(t, children(rec, coord.SpanContext(), step), 1, "the coordinator's %s step", step)
	}

	// An item span per item, ended succeeded once, with its steps.
	items := waitItems(t, rec, run.ID, len(fx.Assets)+1)
	for _, a := range fx.Assets {
		s := items[a]
		require.Equal(t, []string{ID(coord.SpanContext())}, linked(s), "%s links to the run's span", a)
		require.Equal(t, coord.SpanContext().TraceID(), s.SpanContext().TraceID(), "%s joins the run's trace", a)
	}
	// DXY links to the input whose completion enqueued it, or, when the
	// run's settle found it ready first (its last resort, which knows no
	// span: the run's span context is not stored), to nothing.
	dxy := items[fx.DXY]
	links := linked(dxy)
	require.LessOrEqual(t, len(links), 1)
	from := ""
	for _, in := range fx.DXYInputs {
		if len(links) == 1 && ID(items[in].SpanContext()) == links[0] {
			from = in
		}
	}
	require.True(t, len(links) == 0 || from != "", "DXY's link is one of its inputs' item spans")
	for key, s := range items {
		require.Equal(t, "1", Attr(s, string(telemetry.KeyAttempt)), key)
		require.Equal(t, "1", Attr(s, string(telemetry.KeyFence)), key)
		require.Equal(t, run.ID.String(), Attr(s, string(telemetry.KeyRun)), key)
		for _, step := range []string{telemetry.SpanVouch, telemetry.SpanClaim, telemetry.SpanComplete} {
			require.Len(t, children(rec, s.SpanContext(), step), 1, "%s's %s step", key, step)
		}
	}
	for _, in := range fx.DXYInputs {
		complete := children(rec, items[in].SpanContext(), telemetry.SpanComplete)[0]
		require.Len(t, children(rec, complete.SpanContext(), telemetry.SpanFanIn), 1, "%s ran DXY's fan-in check as it completed", in)
	}

	// A redelivered duplicate: a span of its own, outcome duplicate,
	// linked to the run like the first delivery.
	key := ledger.ItemKey{Run: run.ID, Asset: fx.Assets[0]}
	dup := []queue.Message{message.New(key, sum.Fence, false).QueueMessage()}
	dup[0].Attributes[telemetry.AttrTrace] = stampOf(t, coord.SpanContext())
	_, err = queue.SendAll(t.Context(), b.Work, dup, nil)
	require.NoError(t, err)
	var d sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range Named(rec, telemetry.SpanItem) {
			if Attr(s, string(telemetry.KeyItem)) == key.String() && Attr(s, string(telemetry.KeyOutcome)) == "duplicate" {
				d = s
				return true
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "a span with outcome duplicate for the redelivered %s", key)
	require.Equal(t, []string{ID(coord.SpanContext())}, linked(d))
	require.Empty(t, children(rec, d.SpanContext(), telemetry.SpanComplete), "a duplicate records no verdict")

	// The metrics, with bounded attributes only.
	m := Metrics(t, reader)
	require.Equal(t, int64(len(fx.Assets)+1), m.Sums["baton.items"][Set{Job: "fx", Outcome: "succeeded", Engine: b.Name}])
	require.GreaterOrEqual(t, m.Sums["baton.items"][Set{Job: "fx", Outcome: "duplicate", Engine: b.Name}], int64(1))
	require.Equal(t, int64(1), m.Sums["baton.coordinator.invocations"][Set{Job: "fx", Outcome: "opened", Engine: b.Name}])
	require.Equal(t, uint64(len(fx.Assets)+1), m.Counts["baton.item.tick_to_done"][Set{Job: "fx", Engine: b.Name}])
	require.GreaterOrEqual(t, m.Counts["baton.item.claim_latency"][Set{Job: "fx", Engine: b.Name}], uint64(len(fx.Assets)+2))
	// The runtime's queues report their depth while it consumes.
	require.Contains(t, m.Gauges["baton.queue.depth"], Set{Queue: "work", Engine: b.Name}, "%v", m.Gauges)
	if b.DeadLetter != nil {
		require.Contains(t, m.Gauges["baton.queue.depth"], Set{Queue: "work-dlq", Engine: b.Name}, "%v", m.Gauges)
	}
	return Traced{Coordinator: coord, Items: items}
}

// Descendants are the ended spans under parent, at any depth.
func Descendants(rec *tracetest.SpanRecorder, parent trace.SpanContext) []sdktrace.ReadOnlySpan {
	ended := rec.Ended()
	byParent := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byParent[ID(s.Parent())] = append(byParent[ID(s.Parent())], s)
	}
	var out []sdktrace.ReadOnlySpan
	next := []string{ID(parent)}
	for len(next) > 0 {
		id := next[0]
		next = next[1:]
		for _, s := range byParent[id] {
			out = append(out, s)
			next = append(next, ID(s.SpanContext()))
		}
	}
	return out
}

// Set is a metric data point's attributes, which are these four only.
type Set struct{ Job, Outcome, Engine, Queue string }

// Measured is what a reader collected: the sums of counters, the counts
// of histograms and the values of gauges, by instrument and attribute
// set.
type Measured struct {
	Sums   map[string]map[Set]int64
	Counts map[string]map[Set]uint64
	Gauges map[string]map[Set]int64
}

// Metrics collects reader's metrics; an attribute other than the job,
// the outcome, the engine and a queue's name fails the test.
func Metrics(t testing.TB, reader *sdkmetric.ManualReader) Measured {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := Measured{Sums: map[string]map[Set]int64{}, Counts: map[string]map[Set]uint64{}, Gauges: map[string]map[Set]int64{}}
	set := func(a attribute.Set) Set {
		var s Set
		for _, kv := range a.ToSlice() {
			switch kv.Key {
			case telemetry.KeyJob:
				s.Job = kv.Value.AsString()
			case telemetry.KeyOutcome:
				s.Outcome = kv.Value.AsString()
			case telemetry.KeyEngine:
				s.Engine = kv.Value.AsString()
			case telemetry.KeyQueue:
				s.Queue = kv.Value.AsString()
			default:
				require.Failf(t, "unbounded metric attribute", "%s", kv.Key)
			}
		}
		return s
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				out.Sums[m.Name] = map[Set]int64{}
				for _, p := range data.DataPoints {
					out.Sums[m.Name][set(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				out.Counts[m.Name] = map[Set]uint64{}
				for _, p := range data.DataPoints {
					out.Counts[m.Name][set(p.Attributes)] += p.Count
				}
			case metricdata.Gauge[int64]:
				out.Gauges[m.Name] = map[Set]int64{}
				for _, p := range data.DataPoints {
					out.Gauges[m.Name][set(p.Attributes)] = p.Value
				}
			}
		}
	}
	return out
}

// stampOf is the AttrTrace value of sc.
func stampOf(t *testing.T, sc trace.SpanContext) string {
	msgs := []queue.Message{{}}
	telemetry.Stamp(trace.ContextWithSpanContext(context.Background(), sc), msgs)
	v, ok := msgs[0].Attributes[telemetry.AttrTrace]
	require.True(t, ok)
	return v
}

// waitItems waits for an item span that ended succeeded for each of n
// items of run, and returns them by asset.
func waitItems(t *testing.T, rec *tracetest.SpanRecorder, run ledger.RunID, n int) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	var out map[string]sdktrace.ReadOnlySpan
	// The item spans end after their verdicts are written: the run may
	// settle a moment before the last one ends.
	require.Eventually(t, func() bool {
		out = map[string]sdktrace.ReadOnlySpan{}
		for _, s := range Named(rec, telemetry.SpanItem) {
			if Attr(s, string(telemetry.KeyRun)) != run.String() || Attr(s, string(telemetry.KeyOutcome)) != "succeeded" {
				continue
			}
			k, err := ledger.ParseItemKey(Attr(s, string(telemetry.KeyItem)))
			require.NoError(t, err)
			require.NotContains(t, out, k.Asset, "one succeeded span per item")
			out[k.Asset] = s
		}
		return len(out) == n
	}, 30*time.Second, 10*time.Millisecond, "a succeeded item span for each of %d items", n)
	return out
}

// children are the ended spans called name whose parent is parent.
func children(rec *tracetest.SpanRecorder, parent trace.SpanContext, name string) []sdktrace.ReadOnlySpan {
	return slices.DeleteFunc(Named(rec, name), func(s sdktrace.ReadOnlySpan) bool {
		return ID(s.Parent()) != ID(parent)
	})
}

// linked names the spans span links to (ID of each).
func linked(span sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, l := range span.Links() {
		out = append(out, ID(l.SpanContext))
	}
	return out
}

// ID names the span of sc, local or remote: its trace and span ids.
func ID(sc trace.SpanContext) string { return sc.TraceID().String() + "/" + sc.SpanID().String() }
