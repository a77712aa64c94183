package awssqs_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
)

func TestRedriveAndURLForARN(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	name := uniqueName("rd")
	url, dlqURL, err := awssqs.EnsureQueues(t.Context(), c, name, 4, time.Minute)
	require.NoError(t, err)
	deleteOnCleanup(t, c, url)
	deleteOnCleanup(t, c, dlqURL)

	p, ok, err := awssqs.New(c, url, nil).Redrive(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 4, p.MaxReceiveCount)
	require.Equal(t, queueAttrs(t, c, dlqURL)["QueueArn"], p.DeadLetterTargetARN)

	got, err := awssqs.URLForARN(t.Context(), c, p.DeadLetterTargetARN)
	require.NoError(t, err)
	require.Equal(t, dlqURL, got)

	// The dead-letter queue itself has no policy.
	_, ok, err = awssqs.New(c, dlqURL, nil).Redrive(t.Context())
	require.NoError(t, err)
	require.False(t, ok)
}

func TestRedriveErrors(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("rd-bad"))})
	require.NoError(t, err)
	deleteOnCleanup(t, c, *out.QueueUrl)
	missing := *out.QueueUrl + "-missing"

	_, _, err = awssqs.New(c, missing, nil).Redrive(t.Context())
	require.ErrorIs(t, err, queue.ErrNotFound)

	_, err = awssqs.URLForARN(t.Context(), c, "arn:aws:sqs:us-east-1:123456789012:"+uniqueName("absent"))
	require.ErrorIs(t, err, queue.ErrNotFound)
	for _, arn := range []string{"", "arn:aws:sns:us-east-1:123456789012:topic", "arn:aws:sqs:us-east-1::name", "not an arn"} {
		_, err = awssqs.URLForARN(t.Context(), c, arn)
		require.ErrorContains(t, err, "not an SQS queue ARN", arn)
	}
}
