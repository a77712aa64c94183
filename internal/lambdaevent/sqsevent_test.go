package lambdaevent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/queue"
)

func TestSQSEventIsTheInverseOfDeliveries(t *testing.T) {
	t.Parallel()
	msgs := []queue.Delivery{
		{
			MessageID: "m1", ReceiptHandle: "r1", Body: []byte(`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`),
			Attributes:   map[string]string{"baton-key": "fx@2026-11-21T12:01:00Z#1/EURUSD", "baton-fence": "1"},
			ReceiveCount: 2, SentAt: time.UnixMilli(1795262460123).UTC(),
		},
		{MessageID: "m2", ReceiptHandle: "r2", Body: []byte("not a baton message"), ReceiveCount: 1},
	}
	ev := lambdaevent.SQSEvent(lambdaevent.SQSEventParams{
		QueueARN: "arn:aws:sqs:us-east-1:123456789012:work", Region: "us-east-1", Messages: msgs,
	})

	// Through JSON, as the handler receives it.
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	var back events.SQSEvent
	require.NoError(t, json.Unmarshal(b, &back))
	ok, bad := lambdaevent.Deliveries(back)
	require.Empty(t, bad)
	require.Equal(t, msgs, ok)

	r := ev.Records[0]
	require.Equal(t, "aws:sqs", r.EventSource)
	require.Equal(t, "arn:aws:sqs:us-east-1:123456789012:work", r.EventSourceARN)
	require.Equal(t, "us-east-1", r.AWSRegion)
	require.Equal(t, "2", r.Attributes["ApproximateReceiveCount"])
	require.Equal(t, "1795262460123", r.Attributes["SentTimestamp"])
	require.Equal(t, "String", r.MessageAttributes["baton-fence"].DataType)
	require.Equal(t, "c6b312d0c84d96419e414b45c3c2a25f", ev.Records[1].Md5OfBody) // md5("not a baton message")
	require.NotContains(t, ev.Records[1].Attributes, "SentTimestamp", "no sent time, no attribute")
}

func TestSQSEventEmpty(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(lambdaevent.SQSEvent(lambdaevent.SQSEventParams{}))
	require.NoError(t, err)
	require.JSONEq(t, `{"Records":[]}`, string(b))
}
