package awssqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// MoveAll moves every message of q, a dead-letter queue, to dst with one
// SQS message-move task (StartMessageMoveTask) and waits, polling
// ListMessageMoveTasks every poll (0: 500ms), until the task ends or ctx is
// done. Moved messages keep their body and attributes. perSecond caps the
// move rate (0: SQS's default, up to 500 per second). It returns the number
// of messages SQS reports moved. SQS refuses the task when q is no queue's
// dead-letter queue or a task already runs on q; a task that ends FAILED
// or CANCELLED is an error naming the status and reason.
func (q *Queue) MoveAll(ctx context.Context, dst *Queue, perSecond int, poll time.Duration) (int64, error) {
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	src, err := queueARN(ctx, q.client, q.url)
	if err != nil {
		return 0, fmt.Errorf("move %s: %w", q.url, err)
	}
	dstARN, err := queueARN(ctx, dst.client, dst.url)
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.url, dst.url, err)
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(src), DestinationArn: aws.String(dstARN)}
	if perSecond > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(min(perSecond, 500)))
	}
	if _, err := q.client.StartMessageMoveTask(ctx, in); err != nil {
		return 0, fmt.Errorf("move %s to %s: start task: %w", q.url, dst.url, translateError(err))
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		out, err := q.client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(src), MaxResults: aws.Int32(1)})
		if err != nil {
			return 0, fmt.Errorf("move %s to %s: list tasks: %w", q.url, dst.url, translateError(err))
		}
		if len(out.Results) == 0 {
			return 0, fmt.Errorf("move %s to %s: the task started is not listed", q.url, dst.url)
		}
		r := out.Results[0]
		switch status := aws.ToString(r.Status); status {
		case "COMPLETED":
			return r.ApproximateNumberOfMessagesMoved, nil
		case "FAILED", "CANCELLED":
			reason := aws.ToString(r.FailureReason)
			return r.ApproximateNumberOfMessagesMoved, fmt.Errorf("move %s to %s: task %s (%s) after %d messages",
				q.url, dst.url, status, reason, r.ApproximateNumberOfMessagesMoved)
		}
		select {
		case <-ctx.Done():
			return r.ApproximateNumberOfMessagesMoved, fmt.Errorf("move %s to %s: %w (the task goes on; see ListMessageMoveTasks)",
				q.url, dst.url, ctx.Err())
		case <-t.C:
		}
	}
}
