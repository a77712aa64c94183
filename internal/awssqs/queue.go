package awssqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/batonhq/baton/internal/queue"
)

var (
	_ queue.Sender   = (*Queue)(nil)
	_ queue.Receiver = (*Queue)(nil)
)

// MaxVisibility is the longest visibility timeout SQS accepts.
const MaxVisibility = 12 * time.Hour

// MaxWait is the longest long poll SQS accepts; longer waits are shortened
// to it.
const MaxWait = 20 * time.Second

// Options tune a Queue. Nil and the zero value mean the defaults.
type Options struct {
	// MessageAttributeNames are the message attributes Receive asks for;
	// empty means all of them.
	MessageAttributeNames []string
}

// Queue is one SQS standard queue as a queue.Sender and queue.Receiver. It
// may be used concurrently.
type Queue struct {
	client    *sqs.Client
	url       string
	attrNames []string
}

// New returns the queue at queueURL, reached with client. It makes no call.
func New(client *sqs.Client, queueURL string, o *Options) *Queue {
	q := &Queue{client: client, url: queueURL, attrNames: []string{"All"}}
	if o != nil && len(o.MessageAttributeNames) > 0 {
		q.attrNames = append([]string(nil), o.MessageAttributeNames...)
	}
	return q
}

// URL is the queue's URL.
func (q *Queue) URL() string { return q.url }

// ARN returns the queue's ARN with one GetQueueAttributes call. It returns
// queue.ErrNotFound when the queue does not exist.
func (q *Queue) ARN(ctx context.Context) (string, error) {
	arn, err := queueARN(ctx, q.client, q.url)
	if err != nil {
		return "", fmt.Errorf("%s: %w", q.url, err)
	}
	return arn, nil
}

// seconds converts d to the whole seconds SQS takes, rounding up (a
// visibility timeout is never shorter than asked), 0 for d <= 0. It
// rejects durations over MaxVisibility.
func seconds(d time.Duration) (int32, error) {
	if d <= 0 {
		return 0, nil
	}
	if d > MaxVisibility {
		return 0, fmt.Errorf("visibility %s exceeds the SQS maximum of %s", d, MaxVisibility)
	}
	return int32((d + time.Second - 1) / time.Second), nil
}

// waitSeconds converts a long-poll wait to whole seconds, rounding down (a
// receive never waits longer than asked) and capping at MaxWait.
func waitSeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32(min(d, MaxWait) / time.Second)
}
