package awssqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/batonhq/baton/internal/queue"
)

var _ queue.BatchDeleter = (*Queue)(nil)

// DeleteBatch removes the messages received with handles in one
// DeleteMessageBatch call (see queue.BatchDeleter). SQS judges each entry
// as DeleteMessage would: an entry it refuses is listed in the
// *queue.BatchError, matching ErrInvalidReceipt when SQS calls the handle
// invalid; an entry SQS reports neither way is listed too (deleting it
// again is safe).
func (q *Queue) DeleteBatch(ctx context.Context, handles []string) error {
	if err := queue.CheckHandles(handles); err != nil {
		return fmt.Errorf("delete batch from %s: %w", q.url, err)
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(handles))
	for i, h := range handles {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
	}
	out, err := q.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return fmt.Errorf("delete batch from %s: %w", q.url, translateError(err))
	}
	if failed := deleteFailures(handles, out); len(failed) > 0 {
		return fmt.Errorf("delete batch from %s: %w", q.url, &queue.BatchError{Failed: failed})
	}
	return nil
}

// deleteFailures lists, by handle and in the order given, the entries SQS
// refused or did not report.
func deleteFailures(handles []string, out *sqs.DeleteMessageBatchOutput) []queue.EntryError {
	ok := make(map[string]bool, len(out.Successful))
	for _, s := range out.Successful {
		ok[aws.ToString(s.Id)] = true
	}
	refused := make(map[string]error, len(out.Failed))
	for _, f := range out.Failed {
		refused[aws.ToString(f.Id)] = translateError(&smithy.GenericAPIError{
			Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), Fault: fault(f.SenderFault),
		})
	}
	var failed []queue.EntryError
	for i, h := range handles {
		id := strconv.Itoa(i)
		switch {
		case refused[id] != nil:
			failed = append(failed, queue.EntryError{ID: h, Err: fmt.Errorf("sqs refused the entry: %w", refused[id])})
		case !ok[id]:
			failed = append(failed, queue.EntryError{ID: h, Err: errors.New("sqs reported no result for the entry")})
		}
	}
	return failed
}

func fault(sender bool) smithy.ErrorFault {
	if sender {
		return smithy.FaultClient
	}
	return smithy.FaultServer
}
