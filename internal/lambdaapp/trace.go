package lambdaapp

import (
	"context"

	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// xrayParent returns ctx with the invocation's X-Ray trace header (which
// the Lambda runtime puts in the context, "Root=1-…;Parent=…;Sampled=…")
// as its remote parent span, so that baton's spans join the function's
// trace; ctx as it is when it has a span already (an instrumented caller,
// the ADOT layer's wrapper) or no header (outside Lambda).
func xrayParent(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	header, _ := ctx.Value("x-amzn-trace-id").(string)
	if header == "" {
		return ctx
	}
	return xray.Propagator{}.Extract(ctx, propagation.MapCarrier{"X-Amzn-Trace-Id": header})
}
