package awssqs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
)

func queueAttrs(t *testing.T, c *sqs.Client, url string) map[string]string {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Attributes
}

type redrive struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     any    `json:"maxReceiveCount"`
}

func requireRedrive(t *testing.T, attrs map[string]string, dlqARN string, max int) {
	t.Helper()
	var p redrive
	require.NoError(t, json.Unmarshal([]byte(attrs["RedrivePolicy"]), &p))
	require.Equal(t, dlqARN, p.DeadLetterTargetArn)
	require.EqualValues(t, max, p.MaxReceiveCount)
}

func TestEnsureQueuesCreatesAndConverges(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	name := uniqueName("work")
	url, dlq, err := awssqs.EnsureQueues(t.Context(), c, name, 5, 90*time.Second)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(url, "/"+name), url)
	require.True(t, strings.HasSuffix(dlq, "/"+name+awssqs.DLQSuffix), dlq)

	dlqAttrs := queueAttrs(t, c, dlq)
	require.Equal(t, "1209600", dlqAttrs["MessageRetentionPeriod"])
	attrs := queueAttrs(t, c, url)
	require.Equal(t, "90", attrs["VisibilityTimeout"])
	requireRedrive(t, attrs, dlqAttrs["QueueArn"], 5)

	// Again with the same settings: same URLs, nothing changes.
	url2, dlq2, err := awssqs.EnsureQueues(t.Context(), c, name, 5, 90*time.Second)
	require.NoError(t, err)
	require.Equal(t, url, url2)
	require.Equal(t, dlq, dlq2)

	// New settings converge on the existing queues.
	url3, _, err := awssqs.EnsureQueues(t.Context(), c, name, 3, 1500*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, url, url3)
	attrs = queueAttrs(t, c, url)
	require.Equal(t, "2", attrs["VisibilityTimeout"], "rounded up")
	requireRedrive(t, attrs, dlqAttrs["QueueArn"], 3)
}

func TestEnsureQueuesRejectsBadInput(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	for name, args := range map[string]struct {
		name string
		max  int
		vis  time.Duration
	}{
		"empty name":  {"", 5, time.Minute},
		"fifo":        {"q.fifo", 5, time.Minute},
		"long name":   {strings.Repeat("a", 77), 5, time.Minute},
		"bad char":    {"a/b", 5, time.Minute},
		"zero max":    {"q", 0, time.Minute},
		"max too big": {"q", 1001, time.Minute},
		"negative":    {"q", 5, -time.Second},
		"over 12h":    {"q", 5, 13 * time.Hour},
	} {
		_, _, err := awssqs.EnsureQueues(t.Context(), c, args.name, args.max, args.vis)
		require.Error(t, err, name)
	}
}

func TestEnsureQueuesRedrivesToDLQ(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url, dlqURL, err := awssqs.EnsureQueues(t.Context(), c, uniqueName("work"), 1, time.Second)
	require.NoError(t, err)
	q, dlq := awssqs.New(c, url, nil), awssqs.New(c, dlqURL, nil)
	require.NoError(t, q.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: []byte("poison"), Attributes: map[string]string{"k": "v"}}}))

	got, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1}) // the queue's 1 s visibility
	require.NoError(t, err)
	require.Len(t, got, 1)

	var dead []queue.Delivery
	require.Eventually(t, func() bool {
		dead, err = dlq.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute})
		require.NoError(t, err)
		return len(dead) == 1
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, got[0].MessageID, dead[0].MessageID)
	require.Equal(t, "poison", string(dead[0].Body))
	require.Equal(t, "v", dead[0].Attributes["k"])
	rest, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1})
	require.NoError(t, err)
	require.Empty(t, rest)
}
