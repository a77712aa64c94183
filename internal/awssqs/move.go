package awssqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/batonhq/baton/internal/queue"
)

var (
	_ queue.Counter = (*Queue)(nil)
	_ queue.Peeker  = (*Queue)(nil)
	_ queue.Mover   = (*Queue)(nil)
)

// Peek receives and releases (queue.PeekByReceiving): SQS has no other way
// to look. Each peek counts a receive, so a peek at a queue with a redrive
// policy brings its messages closer to the dead-letter queue.
func (q *Queue) Peek(ctx context.Context, max int) ([]queue.Peeked, error) {
	return queue.PeekByReceiving(ctx, q, max)
}

// MoveTo moves everything with SQS's message-move task (MoveAll, the
// redrive the console offers, which keeps attributes) when max <= 0 and
// dst is an SQS queue: q must then be a dead-letter queue, as SQS
// requires. A bounded move, or one to another kind of queue, receives,
// sends and deletes (queue.MoveByReceiving).
func (q *Queue) MoveTo(ctx context.Context, dst queue.Sender, max int) (int, error) {
	if d, ok := dst.(*Queue); ok && max <= 0 {
		n, err := q.MoveAll(ctx, d, 0, 0)
		return int(n), err
	}
	return queue.MoveByReceiving(ctx, q, dst, max)
}

// MoveAll moves every message of q, a dead-letter queue, to dst with one
// SQS message-move task (StartMessageMoveTask) and waits, polling
// ListMessageMoveTasks every poll (0: 500ms), until that task ends or ctx
// is done. Moved messages keep their body and attributes. perSecond caps
// the move rate (0: SQS's default, up to 500 per second). It returns the
// number of messages SQS reports moved. SQS refuses the task when q is no
// queue's dead-letter queue or a task already runs on q; a task that ends
// FAILED or CANCELLED is an error naming the status and reason.
//
// The task waited for is the one started, never an earlier one the list
// still shows first: SQS lists a task's handle only while it runs, so
// MoveAll lists the tasks before starting its own, and takes as its task
// the listed one with its handle, or, once that handle is gone, the newest
// task that was not listed before. It assumes nobody else starts a task on
// q until its own ends.
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
	earlier, err := q.moveTasks(ctx, src)
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.url, dst.url, err)
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(src), DestinationArn: aws.String(dstARN)}
	if perSecond > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(min(perSecond, 500)))
	}
	started, err := q.client.StartMessageMoveTask(ctx, in)
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: start task: %w", q.url, dst.url, translateError(err))
	}
	handle := aws.ToString(started.TaskHandle)
	if handle == "" {
		return 0, fmt.Errorf("move %s to %s: start task: no task handle in the answer", q.url, dst.url)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var moved int64
	for unlisted := 0; ; {
		tasks, err := q.moveTasks(ctx, src)
		if err != nil {
			return moved, fmt.Errorf("move %s to %s: %w", q.url, dst.url, err)
		}
		r, ok := startedTask(tasks, handle, earlier)
		switch {
		case !ok:
			if unlisted++; unlisted > maxUnlistedPolls {
				return 0, fmt.Errorf("move %s to %s: the task started is not listed after %d polls", q.url, dst.url, unlisted)
			}
		default:
			moved = r.ApproximateNumberOfMessagesMoved
			switch status := aws.ToString(r.Status); status {
			case "COMPLETED":
				return moved, nil
			case "FAILED", "CANCELLED":
				reason := aws.ToString(r.FailureReason)
				return moved, fmt.Errorf("move %s to %s: task %s (%s) after %d messages", q.url, dst.url, status, reason, moved)
			}
		}
		select {
		case <-ctx.Done():
			return moved, fmt.Errorf("move %s to %s: %w (the task goes on; see ListMessageMoveTasks)", q.url, dst.url, ctx.Err())
		case <-t.C:
		}
	}
}

// maxUnlistedPolls is how many polls MoveAll waits for the task it
// started to be listed.
const maxUnlistedPolls = 20

// moveTasks lists the newest move tasks of source (at most 10, newest
// first).
func (q *Queue) moveTasks(ctx context.Context, source string) ([]types.ListMessageMoveTasksResultEntry, error) {
	out, err := q.client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(source), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", translateError(err))
	}
	return out.Results, nil
}

// startedTask finds, in tasks (newest first), the task started with
// handle: the one listed with that handle (it runs), or else the newest
// task if it is not the newest of earlier, the tasks listed before the
// start (it ended, and SQS no longer shows its handle). ok is false when
// the list does not show it yet.
func startedTask(tasks []types.ListMessageMoveTasksResultEntry, handle string, earlier []types.ListMessageMoveTasksResultEntry) (types.ListMessageMoveTasksResultEntry, bool) {
	for _, r := range tasks {
		if aws.ToString(r.TaskHandle) == handle {
			return r, true
		}
	}
	if len(tasks) == 0 || aws.ToString(tasks[0].TaskHandle) != "" {
		return types.ListMessageMoveTasksResultEntry{}, false // none, or another task running
	}
	if len(earlier) > 0 && tasks[0].StartedTimestamp == earlier[0].StartedTimestamp {
		return types.ListMessageMoveTasksResultEntry{}, false // still the earlier newest
	}
	return tasks[0], true
}
