package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaapp"
)

// Every line of an invocation carries Powertools' keys, the function's
// ARN and memory size included, as the Lambda runtime gives them; and
// every metric has one spelling of the service dimension, Powertools'
// "service".
func TestLogsAndMetricsCarryPowertoolsKeys(t *testing.T) {
	b := newBackend(t)
	var logs, metrics bytes.Buffer
	p := params(b, func() time.Time { return fixedAt })
	p.Logger, p.Metrics = lambdaapp.NewLogger(&logs, slog.LevelDebug), &metrics
	h, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	prev := lambdacontext.MemoryLimitInMB
	lambdacontext.MemoryLimitInMB = 256
	defer func() { lambdacontext.MemoryLimitInMB = prev }()
	const arn = "arn:aws:lambda:eu-west-1:123456789012:function:baton-prod-Coordinator"
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1", InvokedFunctionArn: arn})
	_, err = h.Handle(ctx, []byte(`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.NotEmpty(t, lines)
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		require.Equal(t, arn, rec["function_arn"], l)
		require.EqualValues(t, 256, rec["function_memory_size"], l)
		require.Equal(t, "req-1", rec["function_request_id"], l)
	}
	for _, l := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		require.NotContains(t, rec, "Service", "one spelling: service")
		require.Contains(t, rec, "service", l)
	}
}
