package awsbackend_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend/awsbackend"
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
