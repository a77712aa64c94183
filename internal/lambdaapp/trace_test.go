package lambdaapp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/telemetry"
	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// xrayHeader is an invocation's X-Ray trace header as the Lambda runtime
// puts it in the context.
func xrayHeader(ctx context.Context, parent string) context.Context {
	//lint:ignore SA1029 the Lambda runtime's own key
	return context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent="+parent+";Sampled=1")
}

// Under Lambda the handlers' spans join the invocation's X-Ray trace:
// the coordinator's span and the consumer's item spans are children of
// their invocations' segments, and an item span links to the run's span
// through the SQS message attribute. A refused lease counts as contention.
func TestHandlersJoinTheXRayTrace(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	tp, rec := telemetrytest.Recorder(t)
	reader := sdkmetric.NewManualReader()
	p := params(b, func() time.Time { return fixedAt })
	p.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Engine: "sqlite"})
	coord, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	cons, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = lambda.NewHandler(coord.Handle).Invoke(xrayHeader(ctx, "53995c3f42cd8ad8"), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	spans := telemetrytest.Named(rec, telemetry.SpanCoordinator)
	require.Len(t, spans, 1)
	run := spans[0]
	require.Equal(t, "5759e988bd862e3fe1be46a994272793", run.SpanContext().TraceID().String())
	require.Equal(t, "53995c3f42cd8ad8", run.Parent().SpanID().String(), "a child of the invocation's segment")

	msgs := drain(t, b.Work)
	require.Len(t, msgs, 7)
	ev := lambdaevent.SQSEvent(lambdaevent.SQSEventParams{Messages: msgs[:1]})
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	out, err := lambda.NewHandler(cons.Handle).Invoke(xrayHeader(ctx, "6a995c3f42cd8ad9"), payload)
	require.NoError(t, err)
	var resp events.SQSEventResponse
	require.NoError(t, json.Unmarshal(out, &resp))
	require.Empty(t, resp.BatchItemFailures)
	items := telemetrytest.Named(rec, telemetry.SpanItem)
	require.Len(t, items, 1)
	require.Equal(t, "6a995c3f42cd8ad9", items[0].Parent().SpanID().String())
	require.Len(t, items[0].Links(), 1)
	require.Equal(t, telemetrytest.ID(run.SpanContext()), telemetrytest.ID(items[0].Links()[0].SpanContext))

	// The lease held by another invocation: contention.
	_, err = b.Leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "baton-test/other", TTL: time.Minute, Now: fixedAt})
	require.NoError(t, err)
	_, err = lambda.NewHandler(coord.Handle).Invoke(ctx, fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	m := telemetrytest.Metrics(t, reader)
	require.Equal(t, int64(1), m.Sums["baton.lease.contention"][telemetrytest.Set{Job: "fx", Engine: "sqlite"}])
	require.Equal(t, int64(1), m.Sums["baton.coordinator.invocations"][telemetrytest.Set{Job: "fx", Outcome: "skipped", Engine: "sqlite"}])
	require.Equal(t, int64(1), m.Sums["baton.items"][telemetrytest.Set{Job: "fx", Outcome: "succeeded", Engine: "sqlite"}])
}
