package lambdaevent

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/queue"
)

// SQS system attribute names Deliveries reads.
const (
	AttrApproximateReceiveCount = "ApproximateReceiveCount"
	AttrSentTimestamp           = "SentTimestamp"
)

// RecordError is an SQS record that could not be turned into a delivery.
// The handler must report it as a batch-item failure (so that it is retried
// and, at the queue's maximum receive count, dead-lettered), never drop it.
type RecordError struct {
	MessageID string
	Err       error
}

func (e RecordError) Error() string { return fmt.Sprintf("sqs record %q: %v", e.MessageID, e.Err) }

// Deliveries translates the records of an SQS event, in order. MessageID,
// ReceiptHandle and Body are copied; ReceiveCount comes from the
// ApproximateReceiveCount attribute (1 when absent, as in hand-written
// fixtures); SentAt from SentTimestamp (Unix milliseconds; zero when
// absent); Attributes hold the message attributes that have a string value
// (String and Number data types; binary attributes are not carried). A
// record without a message id, or whose attributes do not parse, is
// returned in bad instead.
func Deliveries(ev events.SQSEvent) (ok []queue.Delivery, bad []RecordError) {
	ok = make([]queue.Delivery, 0, len(ev.Records))
	for _, r := range ev.Records {
		d, err := delivery(r)
		if err != nil {
			bad = append(bad, RecordError{MessageID: r.MessageId, Err: err})
			continue
		}
		ok = append(ok, d)
	}
	return ok, bad
}

func delivery(r events.SQSMessage) (queue.Delivery, error) {
	if r.MessageId == "" {
		return queue.Delivery{}, errors.New(`field "messageId" is empty`)
	}
	d := queue.Delivery{
		MessageID:     r.MessageId,
		ReceiptHandle: r.ReceiptHandle,
		Body:          []byte(r.Body),
		ReceiveCount:  1,
	}
	if s, ok := r.Attributes[AttrApproximateReceiveCount]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return queue.Delivery{}, fmt.Errorf("attribute %s %q is not a positive integer", AttrApproximateReceiveCount, s)
		}
		d.ReceiveCount = n
	}
	if s, ok := r.Attributes[AttrSentTimestamp]; ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			return queue.Delivery{}, fmt.Errorf("attribute %s %q is not Unix milliseconds", AttrSentTimestamp, s)
		}
		d.SentAt = time.UnixMilli(ms).UTC()
	}
	for name, a := range r.MessageAttributes {
		if a.StringValue == nil {
			continue
		}
		if d.Attributes == nil {
			d.Attributes = make(map[string]string, len(r.MessageAttributes))
		}
		d.Attributes[name] = *a.StringValue
	}
	return d, nil
}

// BatchResponse reports the given message ids as batch-item failures, in
// order, without repeats. The function's event source mapping must have
// ReportBatchItemFailures; every record not listed is deleted from the
// queue.
func BatchResponse(failed ...[]string) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	seen := map[string]bool{}
	for _, ids := range failed {
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
	}
	return resp
}

// ConsumerResponse is the batch response for the consumer's verdict: the
// messages res says to redeliver (Result.Failed) and the records that could
// not be translated. Dead-lettered messages are acknowledged: they were
// forwarded to the dead-letter queue with their reason.
func ConsumerResponse(res consumer.Result, untranslated []RecordError) events.SQSEventResponse {
	failed := make([]string, 0, len(res.Failed))
	for _, f := range res.Failed {
		failed = append(failed, f.MessageID)
	}
	bad := make([]string, 0, len(untranslated))
	for _, r := range untranslated {
		bad = append(bad, r.MessageID)
	}
	return BatchResponse(failed, bad)
}
