package awssqs

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Depth is the approximate number of messages in a queue, as SQS reports
// it (eventually consistent, lagging up to about a minute).
type Depth struct {
	Visible  int // ApproximateNumberOfMessages: available for receive
	InFlight int // ApproximateNumberOfMessagesNotVisible: received, not yet deleted or visible again
	Delayed  int // ApproximateNumberOfMessagesDelayed: not yet available
}

// Total is all the messages the queue holds.
func (d Depth) Total() int { return d.Visible + d.InFlight + d.Delayed }

var depthAttributes = []types.QueueAttributeName{
	types.QueueAttributeNameApproximateNumberOfMessages,
	types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
}

// Depth reads the queue's approximate message counts with one
// GetQueueAttributes call. It returns queue.ErrNotFound when the queue does
// not exist.
func (q *Queue) Depth(ctx context.Context) (Depth, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.url),
		AttributeNames: depthAttributes,
	})
	if err != nil {
		return Depth{}, fmt.Errorf("depth of %s: %w", q.url, translateError(err))
	}
	var d Depth
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
			return Depth{}, fmt.Errorf("depth of %s: %s: %w", q.url, f.name, err)
		}
		*f.dst = n
	}
	return d, nil
}
