// Package localaws runs local servers that speak the DynamoDB and SQS wire
// protocols, for tests of the AWS adapters. It is test support: only _test
// files import it.
//
// DynamoDB(t) and SQS(t) start dynalite (in memory) and local-aws-sqs on a
// kernel-chosen loopback port, once per test binary, and return the
// Endpoint; DynamoDBClient(t) and SQSClient(t) return aws-sdk-go-v2 clients
// for them (static dummy credentials, us-east-1, BaseEndpoint set, nothing
// read from the environment). The servers are shared by every test of the
// binary, so tests name their tables and queues uniquely. The servers are
// Node.js programs installed by `npm ci` in infra/local; the launcher is
// infra/local/start.js. When node or the packages are missing the test is
// skipped, unless CI=true, where it fails: a skip there would hide a broken
// environment.
//
// A server dies with the test process: it runs in its own process group
// with a parent-death SIGKILL on Linux, and exits when its stdin pipe from
// the test process closes everywhere. Stop kills the servers earlier, from a
// TestMain.
//
// # What the emulators differ in
//
// Checked by this package's tests against the pinned versions (see
// infra/local/README.md); a test that starts failing after an upgrade means
// the difference is gone or changed.
//
// dynalite:
//   - ReturnValuesOnConditionCheckFailure is ignored: a failed conditional
//     write returns ConditionalCheckFailedException without the item.
//     Adapters that want the current record after a failed condition must
//     read it (consistently) themselves.
//   - UpdateItem with a ConditionExpression and ReturnValues ALL_NEW works,
//     as do condition failures on it.
//   - TransactWriteItems/TransactGetItems and UpdateTimeToLive are not
//     implemented (UnknownOperationException).
//   - A new table is CREATING for one server event-loop turn (the launcher
//     sets createTableMs to 0); wait for ACTIVE (TableExistsWaiter) before
//     writing, as on DynamoDB.
//   - Reads are always strongly consistent.
//
// local-aws-sqs (standard queues, JSON protocol as aws-sdk-go-v2 uses it):
//   - ReceiveMessage honours only the deprecated AttributeNames list, not
//     MessageSystemAttributeNames; send both to get ApproximateReceiveCount
//     and SentTimestamp from the emulator and from SQS.
//   - Version 2.0.2 increments ApproximateReceiveCount on every
//     ChangeMessageVisibility, so that visibility changes count towards a
//     RedrivePolicy's maxReceiveCount. The launcher fixes this as it loads
//     the package (only receives count, as on SQS) and refuses to start if
//     the fix no longer applies.
//   - A redrive moves the message to the dead-letter queue when its
//     visibility timeout ends after the maxReceiveCount-th receive (SQS moves
//     it on the next receive). It keeps its MessageId, body and attributes;
//     its receive count starts again at 0 and it carries
//     DeadLetterQueueSourceArn.
//   - DeleteMessage and ChangeMessageVisibility accept a stale receipt handle
//     of a message still in the queue and act on that message. Once the
//     message is gone DeleteMessage still succeeds, ChangeMessageVisibility
//     returns ReceiptHandleIsInvalid. A handle that does not decode, or is
//     another queue's, is ReceiptHandleIsInvalid for both.
//   - A long poll returns early only when MaxNumberOfMessages messages were
//     found; otherwise it lasts WaitTimeSeconds (plus 40 ms).
//   - ApproximateNumberOfMessages includes in-flight messages, and a message
//     just sent counts as ApproximateNumberOfMessagesDelayed until the
//     server's next event-loop turn.
//   - Error codes arrive as the legacy query codes
//     (AWS.SimpleQueueService.NonExistentQueue, …) through the
//     x-amzn-query-error header, as from SQS; the SDK's typed errors
//     (*types.QueueDoesNotExist, …) still match.
//   - SendMessageBatch rejects more than 10 entries
//     (TooManyEntriesInBatchRequest) and reports invalid entries (reserved
//     or empty attribute names and values) per entry in Failed.
package localaws
