package lambdaevent

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/batonhq/baton/internal/queue"
)

// EventSourceSQS is the eventSource of an SQS record.
const EventSourceSQS = "aws:sqs"

// SQSEventParams are the inputs of SQSEvent.
type SQSEventParams struct {
	// QueueARN and Region fill each record's eventSourceARN and awsRegion.
	QueueARN string
	Region   string
	Messages []queue.Delivery
}

// SQSEvent builds the event Lambda's SQS event source delivers for
// p.Messages, one record each, in order: message id, receipt handle, body
// and its MD5, the ApproximateReceiveCount and SentTimestamp system
// attributes (SentTimestamp only when SentAt is set), and the message
// attributes as String attributes. It is the inverse of Deliveries:
// Deliveries(SQSEvent(p)) gives p.Messages back.
func SQSEvent(p SQSEventParams) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(p.Messages))}
	for _, d := range p.Messages {
		sum := md5.Sum(d.Body)
		r := events.SQSMessage{
			MessageId:     d.MessageID,
			ReceiptHandle: d.ReceiptHandle,
			Body:          string(d.Body),
			Md5OfBody:     hex.EncodeToString(sum[:]),
			Attributes: map[string]string{
				AttrApproximateReceiveCount: strconv.Itoa(max(d.ReceiveCount, 1)),
			},
			MessageAttributes: make(map[string]events.SQSMessageAttribute, len(d.Attributes)),
			EventSource:       EventSourceSQS,
			EventSourceARN:    p.QueueARN,
			AWSRegion:         p.Region,
		}
		if !d.SentAt.IsZero() {
			r.Attributes[AttrSentTimestamp] = strconv.FormatInt(d.SentAt.UnixMilli(), 10)
		}
		for name, v := range d.Attributes {
			r.MessageAttributes[name] = events.SQSMessageAttribute{
				StringValue: &v, DataType: "String",
				StringListValues: []string{}, BinaryListValues: [][]byte{},
			}
		}
		ev.Records = append(ev.Records, r)
	}
	return ev
}
