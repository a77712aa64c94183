package awssqs

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/batonhq/baton/internal/queue"
)

// errQueueExists: CreateQueue found the name taken by a queue with other
// attributes. Not a port error; EnsureQueues handles it.
var errQueueExists = errors.New("queue exists with other attributes")

// translateError maps an SQS error to the queue port's sentinels, keeping
// the SDK error in the chain; errors it does not know pass through as they
// are. SQS reports codes in two spellings, the JSON protocol's shape name
// and the legacy query code that the SDK prefers when the server sends it
// (x-amzn-query-error); both are listed.
func translateError(err error) error {
	var ae smithy.APIError
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	var sentinel error
	switch ae.ErrorCode() {
	case "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue":
		sentinel = queue.ErrNotFound
	case "ReceiptHandleIsInvalid", "InvalidReceiptHandle",
		"MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight":
		sentinel = queue.ErrInvalidReceipt
	case "TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
		"BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong",
		"EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest",
		"BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct":
		sentinel = queue.ErrBatchTooLarge
	case "QueueAlreadyExists", "QueueNameExists", "AWS.SimpleQueueService.QueueNameExists":
		sentinel = errQueueExists
	default:
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
