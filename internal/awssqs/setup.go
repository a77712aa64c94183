package awssqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DLQSuffix is appended to a work queue's name to name its dead-letter queue.
const DLQSuffix = "-dlq"

// dlqRetention is how long the dead-letter queue keeps messages: the SQS
// maximum, 14 days, so that operators have time to redrive.
const dlqRetention = 14 * 24 * time.Hour

// EnsureQueues creates, or brings up to date, the standard queue name and
// its dead-letter queue name+DLQSuffix: the work queue gets the visibility
// timeout (rounded up to whole seconds) and a RedrivePolicy that moves a
// message to the dead-letter queue after maxReceives receives; the
// dead-letter queue keeps messages 14 days. It is idempotent: on existing
// queues it sets those attributes (other attributes are left alone). It
// returns both queue URLs.
func EnsureQueues(ctx context.Context, client *sqs.Client, name string, maxReceives int, visibility time.Duration) (queueURL, dlqURL string, err error) {
	if err := checkSetup(name, maxReceives, visibility); err != nil {
		return "", "", fmt.Errorf("ensure queue %q: %w", name, err)
	}
	dlqName := name + DLQSuffix
	dlqURL, err = ensureQueue(ctx, client, dlqName, map[string]string{
		string(types.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(int(dlqRetention / time.Second)),
	})
	if err != nil {
		return "", "", fmt.Errorf("ensure queue %q: %w", dlqName, err)
	}
	arn, err := queueARN(ctx, client, dlqURL)
	if err != nil {
		return "", "", fmt.Errorf("ensure queue %q: %w", dlqName, err)
	}
	policy, err := json.Marshal(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{arn, maxReceives})
	if err != nil {
		return "", "", err
	}
	vis, _ := seconds(visibility) // checked above
	queueURL, err = ensureQueue(ctx, client, name, map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(vis)),
		string(types.QueueAttributeNameRedrivePolicy):     string(policy),
	})
	if err != nil {
		return "", "", fmt.Errorf("ensure queue %q: %w", name, err)
	}
	return queueURL, dlqURL, nil
}

func checkSetup(name string, maxReceives int, visibility time.Duration) error {
	switch {
	case name == "":
		return errors.New("empty queue name")
	case strings.HasSuffix(name, ".fifo"):
		return errors.New("FIFO queues are not supported")
	case len(name)+len(DLQSuffix) > 80:
		return fmt.Errorf("name too long: %d characters, at most %d", len(name), 80-len(DLQSuffix))
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "":
		return errors.New("name may hold only letters, digits, '-' and '_'")
	case maxReceives < 1 || maxReceives > 1000:
		return fmt.Errorf("maxReceives %d out of 1..1000", maxReceives)
	case visibility < 0 || visibility > MaxVisibility:
		return fmt.Errorf("visibility %s out of 0..%s", visibility, MaxVisibility)
	}
	return nil
}

// ensureQueue creates the queue with attrs, or sets attrs on it when it
// exists with other values.
func ensureQueue(ctx context.Context, client *sqs.Client, name string, attrs map[string]string) (string, error) {
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	if err = translateError(err); !errors.Is(err, errQueueExists) {
		return "", fmt.Errorf("create: %w", err)
	}
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("get url: %w", translateError(err))
	}
	url := aws.ToString(got.QueueUrl)
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		return "", fmt.Errorf("set attributes: %w", translateError(err))
	}
	return url, nil
}

func queueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("get arn: %w", translateError(err))
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", errors.New("get arn: no QueueArn attribute")
	}
	return arn, nil
}
