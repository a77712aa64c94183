// Package telemetry is the one home of baton's OpenTelemetry
// instrumentation: the tracer and the instruments the core records with,
// the span and attribute names, and the trace context a message carries.
//
// The core (coordinator, consumer, fan-in) takes a *Telemetry and never
// reads a global itself; an entry point builds one from the user's
// providers (New), nil meaning the global ones, which are no-ops until the
// user installs real ones. A nil *Telemetry is the global providers too, so
// a zero-valued Coordinator or Consumer traces through them.
//
// # Cost
//
// Recording is behind span.IsRecording: with a no-op provider an item
// costs its span's context and nothing else, its steps start no span
// (Step) and no attribute is built; metrics are skipped when their
// instrument is not Enabled, and their attribute sets are built once per
// (job, outcome). The consumer's BenchmarkItemInstrumentation and
// BenchmarkHandleTelemetry measure it (BENCHMARKS.md, "Tracing").
//
// # Trace context in messages
//
// A message carries the span context of the run that enqueued it in the
// message attribute AttrTrace (see Stamp and Extract), never in its body:
// the body's decoder refuses unknown fields, so an older consumer would
// dead-letter a body that had one, while it ignores an attribute. The
// attribute's value is versioned ("1;" then the W3C traceparent, then
// optionally ";" and the tracestate); a message without it (sent by a
// version before it, or by hand), or with a version or value this one
// cannot read, is processed all the same, its item span linked to
// nothing.
package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/redact"
)

// ScopeName is the instrumentation scope of baton's tracer and meter.
const ScopeName = "github.com/batonhq/baton"

// Span names.
const (
	SpanCoordinator = "baton.coordinator"   // one coordinator invocation (a trigger, a submission, a chain)
	SpanLease       = "baton.lease.acquire" // taking the job's lease
	SpanOpen        = "baton.run.open"      // opening (or finding) the tick's run
	SpanFanOut      = "baton.fanout"        // sending the run's messages
	SpanSettle      = "baton.settle"        // settling the run (and the job's earlier runs)
	SpanRelease     = "baton.lease.release" // giving the lease back
	SpanItem        = "baton.item"          // one delivery of one item message (an attempt, or a duplicate)
	SpanVouch       = "baton.vouch"         // the ledger vouching for the message, and the other gates
	SpanClaim       = "baton.claim"         // the item's claim
	SpanComplete    = "baton.complete"      // recording the processor's verdict
	SpanFanIn       = "baton.fanin"         // the fan-in check of the derived items downstream
)

// Attribute keys. None carries a payload, a result or an error's text
// beyond what the span's status holds.
const (
	KeyJob     = attribute.Key("baton.job")
	KeyRun     = attribute.Key("baton.run_id")
	KeyItem    = attribute.Key("baton.item.key")
	KeyAttempt = attribute.Key("baton.attempt")
	KeyFence   = attribute.Key("baton.fence")
	KeyOutcome = attribute.Key("baton.outcome")
	KeyEngine  = attribute.Key("baton.engine")
	KeyQueue   = attribute.Key("baton.queue") // a queue's name in the queue depth metric
	KeyEnqueue = attribute.Key("baton.enqueued")
	KeyKind    = attribute.Key("baton.invocation")     // what started a coordinator invocation: trigger, submit, chain
	KeyStopped = attribute.Key("baton.fanout.stopped") // why a fan-out stopped early
	KeyMessage = attribute.Key("messaging.message.id")
	KeyReceive = attribute.Key("baton.receive_count")
)

// AttrTrace is the message attribute that carries the enqueuing span's
// context.
const AttrTrace = "baton-trace"

// traceVersion prefixes AttrTrace's value.
const traceVersion = "1"

// Options are New's inputs. The zero value is the global providers.
type Options struct {
	TracerProvider trace.TracerProvider // nil: otel.GetTracerProvider()
	MeterProvider  metric.MeterProvider // nil: otel.GetMeterProvider()
	// Engine names the backend ("sqlite", "postgres", "aws") in metric
	// attributes; "" leaves it out.
	Engine string
}

// Telemetry is the tracer and the instruments of one entry point. It may
// be used concurrently; nil is the global providers.
type Telemetry struct {
	tracer trace.Tracer
	engine string

	items      metric.Int64Counter
	tickToDone metric.Float64Histogram
	claimLat   metric.Float64Histogram
	contention metric.Int64Counter
	ticks      metric.Int64Counter
	meter      metric.Meter
	depth      metric.Int64ObservableGauge

	mu   sync.RWMutex
	sets map[setKey]options // built once per key
}

// New returns the telemetry of o's providers.
func New(o Options) *Telemetry {
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &Telemetry{tracer: tp.Tracer(ScopeName), engine: o.Engine}
	m := mp.Meter(ScopeName)
	// An instrument the provider refuses is a no-op one: telemetry never
	// fails a run.
	t.items, _ = m.Int64Counter("baton.items", metric.WithUnit("{item}"),
		metric.WithDescription("Item messages handled, by outcome."))
	t.tickToDone, _ = m.Float64Histogram("baton.item.tick_to_done", metric.WithUnit("s"),
		metric.WithDescription("From the tick's nominal time to the item's completion."))
	t.claimLat, _ = m.Float64Histogram("baton.item.claim_latency", metric.WithUnit("s"),
		metric.WithDescription("How long the item's claim (a conditional write) took."))
	t.contention, _ = m.Int64Counter("baton.lease.contention", metric.WithUnit("{trigger}"),
		metric.WithDescription("Coordinator invocations that found the job's lease held by another owner."))
	t.ticks, _ = m.Int64Counter("baton.coordinator.invocations", metric.WithUnit("{invocation}"),
		metric.WithDescription("Coordinator invocations, by outcome."))
	t.meter = m
	t.depth, _ = m.Int64ObservableGauge("baton.queue.depth", metric.WithUnit("{message}"),
		metric.WithDescription("Messages a queue holds: visible, in flight or delayed."))
	return t
}

var global = sync.OnceValue(func() *Telemetry { return New(Options{}) })

// Or returns t, or the global providers' telemetry when t is nil.
func (t *Telemetry) Or() *Telemetry {
	if t == nil {
		return global()
	}
	return t
}

// Tracer is t's tracer.
func (t *Telemetry) Tracer() trace.Tracer { return t.Or().tracer }

// Start starts a span named name under ctx's span.
func (t *Telemetry) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return t.Or().tracer.Start(ctx, name, opts...)
}

// noSpan is a span that records nothing and ends nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Step starts the span of a step of ctx's span (an invocation's lease,
// an item's claim…). When ctx's span does not record (no provider, or
// not sampled), it starts none and returns ctx with a span that does
// nothing: a step of an unsampled span is not sampled under the SDK's
// default (parent-based) sampler, and this way an item with no provider
// costs no allocation per step.
func (t *Telemetry) Step(ctx context.Context, name string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	return t.Or().tracer.Start(ctx, name)
}

// TraceID is the id of the sampled trace ctx's span belongs to, in the
// W3C form (32 lower-case hex digits), and "" when ctx has no valid span
// context or it is not sampled (no trace to look at): what a run record
// keeps (ledger.Run.TraceID). With a no-op provider, a span context
// from elsewhere (Lambda's X-Ray header, an HTTP request's traceparent)
// still counts.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// End ends span with err's status (nil: unset) and, when it records, the
// outcome attribute ("" leaves it out).
func End(span trace.Span, outcome string, err error) {
	if span.IsRecording() {
		if outcome != "" {
			span.SetAttributes(KeyOutcome.String(outcome))
		}
		if err != nil {
			// What operators read elsewhere: no secret in it.
			span.SetStatus(codes.Error, redact.String(err.Error()))
		}
	}
	span.End()
}

// originKey marks the span whose context the messages sent under a
// context carry (WithOrigin).
type originKey struct{}

// WithOrigin returns ctx with its current span as the origin of the
// messages sent under it, and under any span started from it: the
// coordinator marks its invocation span, so that its fan-out's messages
// link to the run, not to the fan-out step.
func WithOrigin(ctx context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, sc)
}

// origin is the span context the messages sent under ctx carry: the
// origin (WithOrigin), else ctx's span.
func origin(ctx context.Context) trace.SpanContext {
	if sc, ok := ctx.Value(originKey{}).(trace.SpanContext); ok {
		return sc
	}
	return trace.SpanContextFromContext(ctx)
}

// Stamp sets AttrTrace on each of msgs that has none, to the span context
// of ctx's origin (WithOrigin) or span; with none valid it does nothing.
// A message that has one already (a copy of a received message, sent
// again or dead-lettered) keeps it. The attribute maps are copied, never
// written in place, since they may be shared with a received delivery.
func Stamp(ctx context.Context, msgs []queue.Message) {
	sc := origin(ctx)
	if !sc.IsValid() {
		return
	}
	Carry(map[string]string{AttrTrace: encode(sc)}, msgs)
}

var traceContext = propagation.TraceContext{}

// encode is AttrTrace's value for sc.
func encode(sc trace.SpanContext) string {
	c := propagation.MapCarrier{}
	traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	v := traceVersion + ";" + c["traceparent"]
	if ts := c["tracestate"]; ts != "" {
		v += ";" + ts
	}
	return v
}

// Extract returns the span context a message's attributes carry, and
// false when they carry none this version can read (no attribute, another
// version, a malformed value): the message is processed all the same. It
// allocates nothing for a value without a tracestate.
func Extract(attrs map[string]string) (trace.SpanContext, bool) {
	v, ok := attrs[AttrTrace]
	if !ok {
		return trace.SpanContext{}, false
	}
	version, rest, ok := strings.Cut(v, ";")
	if !ok || version != traceVersion {
		return trace.SpanContext{}, false
	}
	parent, state, _ := strings.Cut(rest, ";")
	// version 00: "00-" 32 hex "-" 16 hex "-" 2 hex, as W3C Trace Context.
	if len(parent) != 55 || parent[:3] != "00-" || parent[35] != '-' || parent[52] != '-' {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parent[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parent[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	flags, ok := hexByte(parent[53:55])
	if !ok {
		return trace.SpanContext{}, false
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags) & trace.FlagsSampled, Remote: true}
	if state != "" {
		ts, err := trace.ParseTraceState(state)
		if err != nil {
			return trace.SpanContext{}, false
		}
		cfg.TraceState = ts
	}
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// hexByte parses two lower-case hex digits.
func hexByte(s string) (byte, bool) {
	var b byte
	for i := range 2 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		b = b<<4 | c
	}
	return b, true
}

// Carry sets AttrTrace on each of msgs that has none to the value from,
// a received message's attributes, carries (nothing when it carries
// none): the item messages a shard message expands into link to the run
// that sent the shard, as if the coordinator had sent them.
func Carry(from map[string]string, msgs []queue.Message) {
	v, ok := from[AttrTrace]
	if !ok {
		return
	}
	for i := range msgs {
		if _, ok := msgs[i].Attributes[AttrTrace]; ok {
			continue
		}
		attrs := make(map[string]string, len(msgs[i].Attributes)+1)
		for k, a := range msgs[i].Attributes {
			attrs[k] = a
		}
		attrs[AttrTrace] = v
		msgs[i].Attributes = attrs
	}
}

// FromHeader returns ctx with the W3C trace context of an HTTP request's
// headers (traceparent, tracestate) as its remote parent, so that a
// traced caller's request and baton's spans are one trace; ctx as it is
// when it has a span already or the headers carry none.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}
