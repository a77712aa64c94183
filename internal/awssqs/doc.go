// Package awssqs is the queue port (internal/queue) on Amazon SQS standard
// queues, with aws-sdk-go-v2.
//
// New(client, queueURL, opts) returns a *Queue that is a queue.Sender and a
// queue.Receiver, with the optional queue.BatchDeleter, queue.Counter
// (Depth: approximate counts), queue.Peeker (receive and release) and
// queue.Mover (MoveAll's message-move task, or receive, send and delete);
// EnsureQueues creates a work queue and its dead-letter queue.
//
// # Semantics
//
//   - Delivery is at least once and unordered: SQS may deliver a message
//     twice, even to concurrent receivers, and a sent batch may be
//     delivered in any order. Consumers deduplicate (the ledger's
//     idempotency keys do).
//   - SendBatch makes one SendMessageBatch call. It checks the port's limits
//     first (1..10 entries, 256 KiB by queue.Message.Size, distinct ids:
//     queue.ErrBatchTooLarge, nothing sent). Entries SQS cannot carry (empty
//     body, empty attribute value, text outside SQS's character set) are not
//     sent and are reported with ErrInvalidMessage; entries SQS refuses are
//     reported with its code; both in a *queue.BatchError while the other
//     entries are sent. Attributes travel as String message attributes (at
//     most 10 per message, an SQS limit it enforces).
//   - Visibility timeouts are whole seconds: Receive's Visibility and
//     ChangeVisibility's Timeout round up (never hidden for less than
//     asked), to at most 12 hours; a Receive Visibility of 0 uses the
//     queue's default. Receive's Wait rounds down and is capped at 20 s (a
//     long poll never waits longer than asked; under 1 s it is a short poll,
//     which may miss messages on SQS). SQS runs its own clock: the Now fields
//     of the port's params are ignored.
//   - ReceiveCount is ApproximateReceiveCount, SentAt is SentTimestamp
//     (millisecond precision). A queue made by EnsureQueues moves a message
//     to its dead-letter queue on the receive after the maxReceives-th.
//   - Delete with a stale receipt handle of a standard queue's message
//     succeeds without error on SQS (the message may stay); ErrInvalidReceipt
//     comes only for handles SQS cannot use. ChangeVisibility returns
//     ErrInvalidReceipt also when the message is no longer in flight.
//
// What the test server (local-aws-sqs, see internal/localaws) differs in:
// a redrive happens when the last allowed receive's visibility ends, not at
// the next receive; stale receipt
// handles of messages still in the queue act on the message; a long poll
// lasts its whole Wait unless Max messages were found; Depth.Visible
// includes in-flight messages, and a message just sent counts as Delayed
// for an instant. Receive asks for system attributes with both
// MessageSystemAttributeNames and the deprecated AttributeNames because the
// emulator reads only the latter.
//
// # Errors
//
// translateError maps SQS error codes, in both the JSON and the legacy
// query spelling, to the port's sentinels and keeps the SDK error in the
// chain (errors.As still finds *types.QueueDoesNotExist and
// smithy.APIError):
//
//   - QueueDoesNotExist → queue.ErrNotFound
//   - ReceiptHandleIsInvalid, InvalidReceiptHandle, MessageNotInflight →
//     queue.ErrInvalidReceipt
//   - TooManyEntriesInBatchRequest, BatchRequestTooLong, EmptyBatchRequest,
//     BatchEntryIdsNotDistinct → queue.ErrBatchTooLarge
//
// Other errors (throttling, network, credentials) pass through wrapped with
// the operation and queue URL; the SDK has already retried the retryable
// ones. The adapter adds no retries of its own: the entries a
// SendMessageBatch call accepted but SQS refused come back in a
// *queue.BatchError, and queue.SendAll retries those (and only those).
package awssqs
