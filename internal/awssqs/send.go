package awssqs

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/batonhq/baton/internal/queue"
)

// ErrInvalidMessage is the error of a batch entry that SQS cannot carry: an
// empty body, an empty attribute value, or text outside the characters SQS
// accepts (valid Unicode without most control characters). It appears in
// a *queue.BatchError; sending the entry again fails the same way.
var ErrInvalidMessage = errors.New("message not sendable to SQS")

// SendBatch sends 1..queue.MaxBatch messages in one SendMessageBatch call,
// attributes as String message attributes. See queue.Sender for the
// outcomes; entries that SQS refused, or that it cannot carry
// (ErrInvalidMessage, not sent), are listed in the *queue.BatchError.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if err := queue.CheckBatch(msgs); err != nil {
		return fmt.Errorf("send batch to %s: %w", q.url, err)
	}
	var failed []queue.EntryError
	entries := make([]types.SendMessageBatchRequestEntry, 0, len(msgs))
	for _, m := range msgs {
		if err := checkMessage(m); err != nil {
			failed = append(failed, queue.EntryError{ID: m.ID, Err: err})
			continue
		}
		entries = append(entries, entry(m))
	}
	if len(entries) > 0 {
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			return fmt.Errorf("send batch to %s: %w", q.url, translateError(err))
		}
		failed = append(failed, entryFailures(entries, out)...)
	}
	if len(failed) > 0 {
		return &queue.BatchError{Failed: failed}
	}
	return nil
}

// checkMessage reports what SQS could not carry in m.
func checkMessage(m queue.Message) error {
	if len(m.Body) == 0 {
		return fmt.Errorf("%w: empty body", ErrInvalidMessage)
	}
	if !sqsText(m.Body) {
		return fmt.Errorf("%w: body has bytes outside the SQS character set", ErrInvalidMessage)
	}
	for k, v := range m.Attributes {
		if v == "" {
			return fmt.Errorf("%w: attribute %q is empty", ErrInvalidMessage, k)
		}
		if !sqsText([]byte(v)) {
			return fmt.Errorf("%w: attribute %q has bytes outside the SQS character set", ErrInvalidMessage, k)
		}
	}
	return nil
}

// sqsText reports whether b is UTF-8 made only of the characters SQS
// accepts in bodies and string attributes: #x9 #xA #xD #x20-#xD7FF
// #xE000-#xFFFD #x10000-#x10FFFF.
func sqsText(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		switch {
		case r == 0x9, r == 0xA, r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		b = b[n:]
	}
	return true
}

func entry(m queue.Message) types.SendMessageBatchRequestEntry {
	e := types.SendMessageBatchRequestEntry{Id: aws.String(m.ID), MessageBody: aws.String(string(m.Body))}
	if m.Delay > 0 { // whole seconds, rounded up: never visible sooner than asked
		e.DelaySeconds = int32((m.Delay + time.Second - 1) / time.Second)
	}
	if len(m.Attributes) > 0 {
		e.MessageAttributes = make(map[string]types.MessageAttributeValue, len(m.Attributes))
		for k, v := range m.Attributes {
			e.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	return e
}

// entryFailures lists the entries SQS refused, in the order sent, and any
// entry it reported neither way (counted as not sent: resending is safe,
// losing it is not).
func entryFailures(sent []types.SendMessageBatchRequestEntry, out *sqs.SendMessageBatchOutput) []queue.EntryError {
	ok := make(map[string]bool, len(out.Successful))
	for _, s := range out.Successful {
		ok[aws.ToString(s.Id)] = true
	}
	refused := make(map[string]error, len(out.Failed))
	for _, f := range out.Failed {
		refused[aws.ToString(f.Id)] = fmt.Errorf("sqs refused entry: %s (sender fault %t): %s",
			aws.ToString(f.Code), f.SenderFault, aws.ToString(f.Message))
	}
	var failed []queue.EntryError
	for _, e := range sent {
		id := aws.ToString(e.Id)
		switch {
		case refused[id] != nil:
			failed = append(failed, queue.EntryError{ID: id, Err: refused[id]})
		case !ok[id]:
			failed = append(failed, queue.EntryError{ID: id, Err: errors.New("sqs reported no result for the entry")})
		}
	}
	return failed
}
