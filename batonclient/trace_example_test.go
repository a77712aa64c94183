package batonclient_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
)

// Trace a submission and its items with your own OpenTelemetry tracer
// provider (here one that records in memory; in a service, yours with
// its exporter): the submission is a span, and each item's span links to
// it, its processor running inside it.
func ExampleOptions_tracing() {
	dir, _ := os.MkdirTemp("", "baton")
	defer os.RemoveAll(dir)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	catalog := baton.MustCatalog(baton.Job{
		Name: "thumbs", Schedule: "rate(1 hour)", Assets: []string{"nightly"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			// ctx holds the item's span: spans started from it nest under it.
			_, span := tp.Tracer("thumbs").Start(ctx, "resize")
			defer span.End()
			return []byte("ok"), nil
		}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := batonclient.Open(ctx, catalog, &batonclient.Options{
		Store:          filepath.Join(dir, "baton.db"),
		TracerProvider: tp, // the one line; MeterProvider and LogHandler likewise
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	work, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- client.Work(work) }()

	sub, err := client.Submit(ctx, "thumbs", "upload-17", []baton.Item{{Name: "img-1"}, {Name: "img-2"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Wait(ctx, sub.Run, 10*time.Millisecond); err != nil {
		fmt.Println(err)
		return
	}
	stop()
	<-done // the items' spans have ended

	var submission trace.SpanContext
	names := map[string]int{}
	for _, s := range rec.Ended() {
		names[s.Name()]++
		if s.Name() == "baton.coordinator" {
			submission = s.SpanContext()
		}
	}
	linked := 0
	for _, s := range rec.Ended() {
		if s.Name() == "baton.item" && len(s.Links()) == 1 && s.Links()[0].SpanContext.SpanID() == submission.SpanID() {
			linked++
		}
	}
	for _, n := range []string{"baton.coordinator", "baton.item", "resize"} {
		fmt.Println(n, names[n])
	}
	fmt.Println("items linked to the submission:", linked)
	// Output:
	// baton.coordinator 1
	// baton.item 2
	// resize 2
	// items linked to the submission: 2
}
