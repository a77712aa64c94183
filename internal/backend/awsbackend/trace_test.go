package awsbackend_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/telemetry"
	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// One tick of the reference job traced end to end on DynamoDB+SQS (the
// emulators): the trace context travels as an SQS message attribute.
func TestTraceOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	telemetrytest.Run(t, b)
}

// Every DynamoDB and SQS call is a span, a child of the caller's: here a
// coordinator's, whose lease, run and fan-out calls nest under its steps.
func TestSDKCallsAreChildSpans(t *testing.T) {
	t.Parallel()
	tp, rec := telemetrytest.Recorder(t)
	ddb, q := localaws.DynamoDB(t), localaws.SQS(t)
	cfg := aws.Config{Region: ddb.Region, Credentials: ddb.Credentials}
	c := awsbackend.NewTracedClients(cfg, awsbackend.Endpoints{DynamoDB: ddb.URL, SQS: q.URL}, tp)
	res := setUp(t, clients(t), 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	e, err := exec.New(b, exec.Options{Catalog: fx.Catalog(nil), Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp})})
	require.NoError(t, err)
	_, err = e.Trigger(t.Context(), "fx", time.Now(), false)
	require.NoError(t, err)

	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[telemetrytest.ID(s.SpanContext())] = s
	}
	// The SDK's operation spans under each step (its own attempt and
	// signing spans nest under those).
	calls := map[string][]string{}
	for _, s := range rec.Ended() {
		if s.InstrumentationScope().Name == telemetry.ScopeName {
			continue
		}
		if p, ok := byID[telemetrytest.ID(s.Parent())]; ok && p.InstrumentationScope().Name == telemetry.ScopeName {
			calls[p.Name()] = append(calls[p.Name()], s.Name())
		}
	}
	require.Contains(t, calls[telemetry.SpanLease], "DynamoDB.UpdateItem")
	require.Contains(t, calls[telemetry.SpanFanOut], "SQS.SendMessageBatch")
	require.NotEmpty(t, calls[telemetry.SpanOpen])
}
