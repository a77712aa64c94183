package awssqs

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/batonhq/baton/internal/queue"
)

var depthAttributes = []types.QueueAttributeName{
	types.QueueAttributeNameApproximateNumberOfMessages,
	types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
}

// Depth reads the queue's message counts with one GetQueueAttributes call:
// ApproximateNumberOfMessages (Visible), ...NotVisible (InFlight) and
// ...Delayed (Delayed). They are eventually consistent, lagging up to about
// a minute: Approximate is always set. It returns queue.ErrNotFound when
// the queue does not exist.
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.url),
		AttributeNames: depthAttributes,
	})
	if err != nil {
		return queue.Depth{}, fmt.Errorf("depth of %s: %w", q.url, translateError(err))
	}
	d := queue.Depth{Approximate: true}
	for _, f := range []struct {
		name types.QueueAttributeName
		dst  *int
	}{
		{types.QueueAttributeNameApproximateNumberOfMessages, &d.Visible},
		{types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, &d.InFlight},
		{types.QueueAttributeNameApproximateNumberOfMessagesDelayed, &d.Delayed},
	} {
		s, ok := out.Attributes[string(f.name)]
		if !ok {
			continue // SQS leaves out nothing it was asked for; treat absence as 0
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return queue.Depth{}, fmt.Errorf("depth of %s: %s: %w", q.url, f.name, err)
		}
		*f.dst = n
	}
	return d, nil
}
