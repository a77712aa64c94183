package calls

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/lab/bench/awscall"
)

// TestSQSCallsPerOperation pins the SQS requests each port operation costs:
// one per SendBatch, Receive, Delete, DeleteBatch, ChangeVisibility and
// Depth, so that SendAll of n messages costs ceil(n/10) requests when they
// fit by size.
func TestSQSCallsPerOperation(t *testing.T) {
	t.Parallel()
	var n awscall.Counter
	c := localaws.SQSClient(t, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, n.Middleware()) })
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("calls"))})
	require.NoError(t, err)
	q := awssqs.New(c, *out.QueueUrl, nil)
	n.Reset()

	msgs := make([]queue.Message, 37)
	for i := range msgs {
		msgs[i] = queue.Message{Body: []byte("m" + strconv.Itoa(i))}
	}
	_, err = queue.SendAll(t.Context(), q, msgs, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"SendMessageBatch": 4}, n.Snapshot())

	ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 10, Visibility: time.Minute})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ds), 4)
	require.NoError(t, q.Delete(t.Context(), ds[0].ReceiptHandle))
	require.NoError(t, q.DeleteBatch(t.Context(), []string{ds[2].ReceiptHandle, ds[3].ReceiptHandle}))
	require.NoError(t, q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: ds[1].ReceiptHandle}))
	_, err = q.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]int{
		"SendMessageBatch": 4, "ReceiveMessage": 1, "DeleteMessage": 1, "DeleteMessageBatch": 1,
		"ChangeMessageVisibility": 1, "GetQueueAttributes": 1,
	}, n.Snapshot())
	require.Equal(t, 9, n.Total())
}
