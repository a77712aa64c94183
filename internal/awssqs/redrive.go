package awssqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// RedrivePolicy is a queue's dead-letter configuration: after
// MaxReceiveCount receives without a delete, SQS moves a message to the
// queue with ARN DeadLetterTargetARN.
type RedrivePolicy struct {
	DeadLetterTargetARN string
	MaxReceiveCount     int
}

// Redrive reads the queue's RedrivePolicy with one GetQueueAttributes
// call. ok is false when the queue has none. It returns queue.ErrNotFound
// when the queue does not exist.
func (q *Queue) Redrive(ctx context.Context) (p RedrivePolicy, ok bool, err error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return RedrivePolicy{}, false, fmt.Errorf("redrive policy of %s: %w", q.url, translateError(err))
	}
	raw := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]
	if raw == "" {
		return RedrivePolicy{}, false, nil
	}
	p, err = parseRedrive(raw)
	if err != nil {
		return RedrivePolicy{}, false, fmt.Errorf("redrive policy of %s: %w", q.url, err)
	}
	return p, true, nil
}

// parseRedrive reads a RedrivePolicy attribute. SQS writes maxReceiveCount
// as a number or as a string holding one; both are accepted.
func parseRedrive(raw string) (RedrivePolicy, error) {
	var doc struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return RedrivePolicy{}, fmt.Errorf("%q is not a JSON policy: %w", raw, err)
	}
	n, err := strconv.Atoi(strings.Trim(string(doc.MaxReceiveCount), `"`))
	if err != nil || n < 1 {
		return RedrivePolicy{}, fmt.Errorf("%q: maxReceiveCount is not a positive integer", raw)
	}
	if doc.DeadLetterTargetArn == "" {
		return RedrivePolicy{}, fmt.Errorf("%q: no deadLetterTargetArn", raw)
	}
	return RedrivePolicy{DeadLetterTargetARN: doc.DeadLetterTargetArn, MaxReceiveCount: n}, nil
}

// URLForARN returns the URL of the queue with the given ARN
// (arn:aws:sqs:<region>:<account>:<name>) with one GetQueueUrl call. The
// client must be for the ARN's region. It returns queue.ErrNotFound when
// the queue does not exist.
func URLForARN(ctx context.Context, client *sqs.Client, arn string) (string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[4] == "" || parts[5] == "" {
		return "", fmt.Errorf("queue url for %q: not an SQS queue ARN", arn)
	}
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{
		QueueName:              aws.String(parts[5]),
		QueueOwnerAWSAccountId: aws.String(parts[4]),
	})
	if err != nil {
		return "", fmt.Errorf("queue url for %s: %w", arn, translateError(err))
	}
	url := aws.ToString(out.QueueUrl)
	if url == "" {
		return "", errors.New("queue url for " + arn + ": empty answer")
	}
	return url, nil
}
