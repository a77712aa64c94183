package awssqs_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/queue/queuetest"
)

// harness makes queues on the test binary's local-aws-sqs server.
var harness = queuetest.Harness{
	NewQueue:            newConformanceQueue,
	NewNonexistentQueue: newMissingQueue,
	// Entries SQS cannot carry (refused before the call, with
	// ErrInvalidMessage) and one the server refuses.
	Unsendable: []queue.Message{
		{Body: []byte("nul \x00 in the body")},
		{Body: []byte("empty attribute"), Attributes: map[string]string{"k": ""}},
		{Body: []byte("reserved attribute name"), Attributes: map[string]string{"AWS.k": "v"}},
	},
	// SQS accepts some stale receipt handles and keeps its own clock; the
	// test server counts in-flight messages as visible too.
	Capabilities: queuetest.Capabilities{ExactReceiptCheck: false, HonoursNow: false, ExactDepth: false},
}

func newConformanceQueue(t *testing.T, o queuetest.QueueOptions) queuetest.Queue {
	t.Helper()
	c := localaws.SQSClient(t)
	name := uniqueName("qt")
	if o.MaxReceives == 0 {
		out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		require.NoError(t, err)
		deleteOnCleanup(t, c, *out.QueueUrl)
		q := awssqs.New(c, *out.QueueUrl, nil)
		return queuetest.Queue{Sender: q, Receiver: q}
	}
	url, dlqURL, err := awssqs.EnsureQueues(t.Context(), c, name, o.MaxReceives, 30*time.Second)
	require.NoError(t, err)
	deleteOnCleanup(t, c, url)
	deleteOnCleanup(t, c, dlqURL)
	q, dlq := awssqs.New(c, url, nil), awssqs.New(c, dlqURL, nil)
	return queuetest.Queue{Sender: q, Receiver: q, DeadLetters: dlq, DeadLetterSender: dlq}
}

// newMissingQueue names a queue of the server that was never created.
func newMissingQueue(t *testing.T) queuetest.Queue {
	t.Helper()
	q := missingQueue(t)
	return queuetest.Queue{Sender: q, Receiver: q}
}

func missingQueue(t *testing.T) *awssqs.Queue {
	t.Helper()
	return awssqs.New(localaws.SQSClient(t), localaws.SQS(t).URL+"/"+localaws.AccountID+"/"+uniqueName("missing"), nil)
}

func deleteOnCleanup(t *testing.T, c *sqs.Client, url string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		require.NoError(t, err, "delete queue %s", url)
	})
}

func TestQueueConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, harness)
}
