package batonlambda_test

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonlambda"
)

// A bootstrap serving both functions: the template sets BATON_FUNCTION to
// coordinator on one and consumer on the other.
func ExampleStart() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en", "fr"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("hello"), nil }),
	})
	batonlambda.Start(catalog)
}

// A bootstrap per function.
func ExampleStartCoordinator() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("hello"), nil }),
	})
	batonlambda.StartCoordinator(catalog) // and batonlambda.StartConsumer(catalog) in the consumer's bootstrap
}

// Tracing into your own OpenTelemetry pipeline: a tracer provider with
// your exporter (OTLP to the ADOT collector layer, say; see
// docs/tracing.md), given once. Each invocation's spans join its X-Ray
// trace and are flushed before the invocation returns.
func ExampleStartWith() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			// ctx holds the item's span: the processor's own spans nest under it.
			return []byte("hello"), nil
		}),
	})
	var exporter sdktrace.SpanExporter // e.g. otlptracehttp.New(ctx), to the collector layer on localhost:4318
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	batonlambda.StartWith(catalog, &batonlambda.Options{TracerProvider: tp})
}
