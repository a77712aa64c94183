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
	"github.com/batonhq/baton/internal/queue/queuetest"
)

// harness makes queues on the test binary's local-aws-sqs server.
type harness struct{}

func (harness) Capabilities() queuetest.Capabilities {
	// SQS accepts some stale receipt handles and keeps its own clock; the
	// test server counts in-flight messages as visible too.
	return queuetest.Capabilities{ExactReceiptCheck: false, HonoursNow: false, ExactDepth: false}
}

func (harness) NewQueue(t *testing.T, o queuetest.QueueOptions) queuetest.Queue {
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
	queuetest.Run(t, harness{})
}
