// Package batonlambda serves a catalog of jobs as baton's two AWS Lambda
// functions: the coordinator, invoked by each job's schedule (EventBridge
// Scheduler or a rule) and by operators' replays, and the consumer, fed by
// the work queue's SQS event source. A user's bootstrap is a few lines:
//
//	func main() {
//		batonlambda.StartCoordinator(catalog) // or StartConsumer, in the consumer's bootstrap
//	}
//
// or one bootstrap for both functions with Start, which reads the role
// from BATON_FUNCTION (coordinator or consumer).
//
// # Configuration
//
// The functions read their resources from the environment, as the
// template wires them: BATON_TABLE (the DynamoDB table), BATON_QUEUE_URL
// (the work queue), and for the consumer BATON_DLQ_URL and
// BATON_MAX_RECEIVES (the dead-letter queue and the work queue's redrive
// limit); optionally BATON_LOG_LEVEL and, for the coordinator,
// BATON_TRIGGER_SKEW. The SDK's standard configuration gives the region
// and credentials. A bad or missing variable fails the cold start with an
// error naming each one, reported to the Lambda Runtime API.
//
// # Triggers
//
// A trigger names its job: the Scheduler payload {"job", "scheduledTime"},
// a replay {"job", "scheduledTime", "force"}, or a rule's constant input
// {"job"} (the trigger time is then the invocation's). A rule event that
// names no job is accepted only when the catalog has exactly one job.
// Messages of every job of the catalog are consumed by the one consumer.
//
// This package links the AWS engine alone (no SQLite driver).
package batonlambda

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/lambdaapp"
)

// EnvFunction is the variable Start reads: "coordinator" or "consumer".
const EnvFunction = "BATON_FUNCTION"

// Options tune the handlers. The zero value (or nil) reads the process's
// environment and writes to its standard streams.
type Options struct {
	// GetenvFunc reads a variable; nil: os.Getenv.
	GetenvFunc func(string) string
	// Stdout receives the metrics (CloudWatch Embedded Metric Format) and
	// Stderr the JSON logs; nil: os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// LogHandler, when set, receives the log records in place of the
	// JSON lines on Stderr.
	LogHandler slog.Handler
	// TracerProvider records a span per invocation and per item (see
	// docs/tracing.md); nil: the global provider (otel.SetTracerProvider),
	// a no-op until one is set. Spans join the invocation's X-Ray trace.
	// A provider with a ForceFlush method (the SDK's) is flushed at the
	// end of each invocation, before Lambda freezes the process.
	TracerProvider trace.TracerProvider
	// MeterProvider records the item and invocation metrics beside EMF;
	// nil: the global provider. Flushed as TracerProvider.
	MeterProvider metric.MeterProvider
}

func (o *Options) env() lambdaapp.Env {
	e := lambdaapp.Env{GetenvFunc: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr}
	if o == nil {
		return e
	}
	if o.GetenvFunc != nil {
		e.GetenvFunc = o.GetenvFunc
	}
	if o.Stdout != nil {
		e.Stdout = o.Stdout
	}
	if o.Stderr != nil {
		e.Stderr = o.Stderr
	}
	e.LogHandler, e.TracerProvider, e.MeterProvider = o.LogHandler, o.TracerProvider, o.MeterProvider
	return e
}

// CoordinatorHandler is the coordinator function's handler: one trigger
// in, a CoordinatorResponse out.
type CoordinatorHandler struct {
	h     *lambdaapp.CoordinatorHandler
	flush flushers
}

// CoordinatorResponse is what the coordinator returns for a trigger: the
// run, its outcome (opened, resumed, already_fanned_out or skipped), the
// messages enqueued and the lease holder when skipped.
type CoordinatorResponse = lambdaapp.CoordinatorResponse

// NewCoordinatorHandler is the coordinator's cold start: the configuration
// from the environment, the DynamoDB and SQS clients, the handler for
// catalog.
func NewCoordinatorHandler(ctx context.Context, catalog *baton.Catalog, o *Options) (*CoordinatorHandler, error) {
	if catalog == nil {
		return nil, fmt.Errorf("batonlambda: nil catalog")
	}
	h, err := lambdaapp.NewCoordinatorFromEnv(ctx, catalog, o.env())
	if err != nil {
		return nil, err
	}
	return &CoordinatorHandler{h: h, flush: o.flushers()}, nil
}

// Handle runs one trigger (the raw event), then flushes the providers'
// spans and metrics (see Options).
func (h *CoordinatorHandler) Handle(ctx context.Context, payload json.RawMessage) (CoordinatorResponse, error) {
	defer h.flush.flush(ctx)
	return h.h.Handle(ctx, payload)
}

// ConsumerHandler is the consumer function's handler: one SQS batch in,
// the batch-item failures out.
type ConsumerHandler struct {
	h     *lambdaapp.ConsumerHandler
	flush flushers
}

// NewConsumerHandler is the consumer's cold start.
func NewConsumerHandler(ctx context.Context, catalog *baton.Catalog, o *Options) (*ConsumerHandler, error) {
	if catalog == nil {
		return nil, fmt.Errorf("batonlambda: nil catalog")
	}
	h, err := lambdaapp.NewConsumerFromEnv(ctx, catalog, o.env())
	if err != nil {
		return nil, err
	}
	return &ConsumerHandler{h: h, flush: o.flushers()}, nil
}

// Handle processes one SQS batch; it never fails the batch as a whole.
// It then flushes the providers' spans and metrics (see Options).
func (h *ConsumerHandler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer h.flush.flush(ctx)
	return h.h.Handle(ctx, ev)
}

// flusher is a provider that can flush what it buffered: the SDK's
// tracer and meter providers are.
type flusher interface{ ForceFlush(context.Context) error }

// flushers are the options' providers that can flush.
type flushers []flusher

func (o *Options) flushers() flushers {
	var out flushers
	if o == nil {
		return out
	}
	if f, ok := o.TracerProvider.(flusher); ok {
		out = append(out, f)
	}
	if f, ok := o.MeterProvider.(flusher); ok {
		out = append(out, f)
	}
	return out
}

// flush flushes each provider before the invocation returns: Lambda
// freezes the process between invocations, and a batch still buffered
// then is sent late or never. A failure is logged, never the
// invocation's.
func (fs flushers) flush(ctx context.Context) {
	for _, f := range fs {
		if err := f.ForceFlush(context.WithoutCancel(ctx)); err != nil {
			log.Printf("batonlambda: flushing telemetry: %v", err)
		}
	}
}

// StartCoordinator serves catalog as the coordinator function. It does
// not return; a failed cold start is reported to the Runtime API and ends
// the process.
func StartCoordinator(catalog *baton.Catalog) { StartCoordinatorWith(catalog, nil) }

// StartCoordinatorWith is StartCoordinator with options: the user's
// telemetry providers and log handler.
func StartCoordinatorWith(catalog *baton.Catalog, o *Options) {
	ctx := context.Background()
	h, err := NewCoordinatorHandler(ctx, catalog, o)
	if err != nil {
		fail(ctx, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}

// StartConsumer serves catalog as the consumer function. It does not
// return; a failed cold start is reported to the Runtime API and ends the
// process.
func StartConsumer(catalog *baton.Catalog) { StartConsumerWith(catalog, nil) }

// StartConsumerWith is StartConsumer with options.
func StartConsumerWith(catalog *baton.Catalog, o *Options) {
	ctx := context.Background()
	h, err := NewConsumerHandler(ctx, catalog, o)
	if err != nil {
		fail(ctx, err)
	}
	lambda.StartHandlerFunc(h.Handle)
}

// Start serves catalog as the function BATON_FUNCTION names, so that one
// bootstrap can serve both functions. It does not return.
func Start(catalog *baton.Catalog) { StartWith(catalog, nil) }

// StartWith is Start with options.
func StartWith(catalog *baton.Catalog, o *Options) {
	switch role := os.Getenv(EnvFunction); role {
	case "coordinator":
		StartCoordinatorWith(catalog, o)
	case "consumer":
		StartConsumerWith(catalog, o)
	default:
		fail(context.Background(), fmt.Errorf("%s=%q: want coordinator or consumer", EnvFunction, role))
	}
}

func fail(ctx context.Context, err error) {
	if rerr := lambdaapp.ReportInitError(ctx, os.Getenv("AWS_LAMBDA_RUNTIME_API"), err); rerr != nil {
		log.Print(rerr)
	}
	log.Fatal(err)
}
