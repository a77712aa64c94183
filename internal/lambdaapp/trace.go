package lambdaapp

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// xrayParent returns ctx with the invocation's X-Ray trace header (which
// the Lambda runtime puts in the context, "Root=1-…;Parent=…;Sampled=…")
// as its remote parent span, so that baton's spans join the function's
// trace; ctx as it is when it has a span already (an instrumented caller,
// the ADOT layer's wrapper), or no header or one it cannot read (outside
// Lambda).
//
// It reads the header as the X-Ray propagator
// (go.opentelemetry.io/contrib/propagators/aws/xray) does: that package
// links OpenTelemetry's SDK, which a Lambda bootstrap leaves to the user.
func xrayParent(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	header, _ := ctx.Value("x-amzn-trace-id").(string)
	sc, ok := parseXRay(header)
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// parseXRay reads an X-Ray trace header: Root is "1-" then the trace id's
// first 8 hex digits (an epoch), "-" and its other 24; Parent is the span
// id, 16 hex digits; Sampled=1 samples it. The fields may come in any
// order, others are ignored.
func parseXRay(header string) (trace.SpanContext, bool) {
	var cfg trace.SpanContextConfig
	var root, parent bool
	for part := range strings.SplitSeq(header, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			if len(v) != 35 || v[:2] != "1-" || v[10] != '-' {
				return trace.SpanContext{}, false
			}
			id, err := trace.TraceIDFromHex(v[2:10] + v[11:])
			if err != nil {
				return trace.SpanContext{}, false
			}
			cfg.TraceID, root = id, true
		case "Parent":
			id, err := trace.SpanIDFromHex(v)
			if err != nil {
				return trace.SpanContext{}, false
			}
			cfg.SpanID, parent = id, true
		case "Sampled":
			if v == "1" {
				cfg.TraceFlags = trace.FlagsSampled
			}
		}
	}
	if !root || !parent {
		return trace.SpanContext{}, false
	}
	cfg.Remote = true
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}
