package awssqs

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/batonhq/baton/internal/queue"
)

// systemAttributes are the message system attributes Receive needs.
var systemAttributes = []types.MessageSystemAttributeName{
	types.MessageSystemAttributeNameApproximateReceiveCount,
	types.MessageSystemAttributeNameSentTimestamp,
}

// Receive returns up to p.Max messages (clamped to 1..queue.MaxBatch),
// hidden for p.Visibility rounded up to whole seconds (0: the queue's
// default visibility timeout), waiting up to p.Wait rounded down to whole
// seconds and capped at MaxWait. p.Now is ignored: SQS keeps its own clock.
// String and Number attributes arrive as their text, Binary ones base64
// encoded.
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	vis, err := seconds(p.Visibility)
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.url, err)
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.url),
		MaxNumberOfMessages:         int32(min(max(p.Max, 1), queue.MaxBatch)),
		VisibilityTimeout:           vis,
		WaitTimeSeconds:             waitSeconds(p.Wait),
		MessageAttributeNames:       q.attrNames,
		MessageSystemAttributeNames: systemAttributes,
		// Also the deprecated list, which SQS still honours and is all
		// local-aws-sqs reads (it ignores MessageSystemAttributeNames: see
		// TestSQSSystemAttributeNamesIgnored in the launcher's tests).
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeName(types.MessageSystemAttributeNameApproximateReceiveCount),
			types.QueueAttributeName(types.MessageSystemAttributeNameSentTimestamp),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.url, translateError(err))
	}
	ds := make([]queue.Delivery, 0, len(out.Messages))
	for _, m := range out.Messages {
		ds = append(ds, delivery(m))
	}
	return ds, nil
}

// delivery translates a received message. The system attributes are
// metadata: one SQS did not send, or sent unreadable, leaves its field zero
// (ReceiveCount 0: unknown) rather than failing the receive, which would
// leave every message of the batch hidden and unprocessed.
func delivery(m types.Message) queue.Delivery {
	d := queue.Delivery{
		MessageID:     aws.ToString(m.MessageId),
		ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body:          []byte(aws.ToString(m.Body)),
	}
	if count, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil && count > 0 {
		d.ReceiveCount = count
	}
	if sent, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(sent).UTC()
	}
	if len(m.MessageAttributes) > 0 {
		d.Attributes = make(map[string]string, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			if strings.HasPrefix(aws.ToString(v.DataType), "Binary") {
				d.Attributes[k] = base64.StdEncoding.EncodeToString(v.BinaryValue)
				continue
			}
			d.Attributes[k] = aws.ToString(v.StringValue)
		}
	}
	return d
}

// Delete removes the message received with receiptHandle. SQS reports
// ErrInvalidReceipt for a handle it cannot decode; a stale handle of a
// standard queue's message is accepted (the message may stay).
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle)})
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.url, translateError(err))
	}
	return nil
}

// ChangeVisibility makes the message visible again p.Timeout from now,
// rounded up to whole seconds (p.Now is ignored: SQS keeps its own clock).
// It returns ErrInvalidReceipt when SQS rejects the handle, including when
// the message is no longer in flight.
func (q *Queue) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	vis, err := seconds(p.Timeout)
	if err != nil {
		return fmt.Errorf("change visibility on %s: %w", q.url, err)
	}
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(p.ReceiptHandle),
		VisibilityTimeout: vis,
	})
	if err != nil {
		return fmt.Errorf("change visibility on %s: %w", q.url, translateError(err))
	}
	return nil
}
