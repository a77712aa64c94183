package awsbackend

import (
	"context"
	"fmt"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerProvider adapts an OpenTelemetry provider (nil: the global one)
// to smithy-go's tracing API, the SDK clients' own tracing hook
// (Options.TracerProvider), so that each call, its attempts and its
// signing are spans. It is a thin adapter: the contrib module otelaws is
// deprecated in favour of that hook, and the adapter AWS publishes for it
// (smithyoteltracing) is not among the modules this project builds with.
type tracerProvider struct{ tp trace.TracerProvider }

func (p tracerProvider) Tracer(scope string, opts ...tracing.TracerOption) tracing.Tracer {
	tp := p.tp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tracer{t: tp.Tracer(scope)}
}

type tracer struct{ t trace.Tracer }

var spanKinds = map[tracing.SpanKind]trace.SpanKind{
	tracing.SpanKindInternal: trace.SpanKindInternal,
	tracing.SpanKindClient:   trace.SpanKindClient,
	tracing.SpanKindServer:   trace.SpanKindServer,
	tracing.SpanKindProducer: trace.SpanKindProducer,
	tracing.SpanKindConsumer: trace.SpanKindConsumer,
}

func (t tracer) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	var o tracing.SpanOptions
	for _, f := range opts {
		f(&o)
	}
	ctx, s := t.t.Start(ctx, name, trace.WithSpanKind(spanKinds[o.Kind]))
	sp := &span{name: name, s: s}
	if s.IsRecording() {
		s.SetAttributes(attributes(&o.Properties)...)
	}
	return tracing.WithSpan(ctx, sp), sp
}

// span adapts an OpenTelemetry span to smithy-go's.
type span struct {
	name string
	s    trace.Span
}

func (s *span) Name() string { return s.name }

func (s *span) Context() tracing.SpanContext {
	sc := s.s.SpanContext()
	return tracing.SpanContext{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), IsRemote: sc.IsRemote()}
}

func (s *span) AddEvent(name string, opts ...tracing.EventOption) {
	if !s.s.IsRecording() {
		return
	}
	var o tracing.EventOptions
	for _, f := range opts {
		f(&o)
	}
	s.s.AddEvent(name, trace.WithAttributes(attributes(&o.Properties)...))
}

func (s *span) SetStatus(status tracing.SpanStatus) {
	switch status {
	case tracing.SpanStatusOK:
		s.s.SetStatus(codes.Ok, "")
	case tracing.SpanStatusError:
		s.s.SetStatus(codes.Error, "")
	}
}

func (s *span) SetProperty(k, v any) {
	if s.s.IsRecording() {
		s.s.SetAttributes(attribute.String(fmt.Sprint(k), fmt.Sprint(v)))
	}
}

func (s *span) End() { s.s.End() }

// attributes are p's values as span attributes (the SDK's are the RPC
// system, service, method and the like: strings, numbers and booleans).
func attributes(p *smithy.Properties) []attribute.KeyValue {
	values := p.Values()
	out := make([]attribute.KeyValue, 0, len(values))
	for k, v := range values {
		key := fmt.Sprint(k)
		switch v := v.(type) {
		case string:
			out = append(out, attribute.String(key, v))
		case int:
			out = append(out, attribute.Int(key, v))
		case int64:
			out = append(out, attribute.Int64(key, v))
		case bool:
			out = append(out, attribute.Bool(key, v))
		case float64:
			out = append(out, attribute.Float64(key, v))
		default:
			out = append(out, attribute.String(key, fmt.Sprint(v)))
		}
	}
	return out
}
