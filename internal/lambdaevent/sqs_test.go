package lambdaevent_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/queue"
)

func TestDeliveries(t *testing.T) {
	t.Parallel()
	const event = `{"Records":[
	 {"messageId":"m1","receiptHandle":"r1","body":"{\"v\":1}",
	  "attributes":{"ApproximateReceiveCount":"3","SentTimestamp":"1795262460123","SenderId":"X"},
	  "messageAttributes":{
	   "baton-key":{"stringValue":"fx@2026-11-21T12:01:00Z#1/EURUSD","dataType":"String"},
	   "baton-fence":{"stringValue":"7","dataType":"Number"},
	   "blob":{"binaryValue":"AQI=","dataType":"Binary"}},
	  "eventSource":"aws:sqs"},
	 {"messageId":"m2","receiptHandle":"r2","body":"not json"},
	 {"messageId":"m3","receiptHandle":"r3","body":"x","attributes":{"ApproximateReceiveCount":"zero"}},
	 {"messageId":"m4","receiptHandle":"r4","body":"x","attributes":{"ApproximateReceiveCount":"0"}},
	 {"messageId":"m5","receiptHandle":"r5","body":"x","attributes":{"SentTimestamp":"yesterday"}},
	 {"messageId":"","receiptHandle":"r6","body":"x"}
	]}`
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal([]byte(event), &ev))

	ok, bad := lambdaevent.Deliveries(ev)

	require.Equal(t, []queue.Delivery{
		{
			MessageID: "m1", ReceiptHandle: "r1", Body: []byte(`{"v":1}`),
			Attributes:   map[string]string{"baton-key": "fx@2026-11-21T12:01:00Z#1/EURUSD", "baton-fence": "7"},
			ReceiveCount: 3,
			SentAt:       time.UnixMilli(1795262460123).UTC(),
		},
		{MessageID: "m2", ReceiptHandle: "r2", Body: []byte("not json"), ReceiveCount: 1},
	}, ok)
	require.Len(t, bad, 4)
	wantBad := []struct{ id, msg string }{
		{"m3", `ApproximateReceiveCount "zero" is not a positive integer`},
		{"m4", `ApproximateReceiveCount "0" is not a positive integer`},
		{"m5", `SentTimestamp "yesterday" is not Unix milliseconds`},
		{"", `field "messageId" is empty`},
	}
	for i, w := range wantBad {
		require.Equal(t, w.id, bad[i].MessageID)
		require.ErrorContains(t, bad[i], w.msg)
	}
}

func TestDeliveriesEmptyEvent(t *testing.T) {
	t.Parallel()
	ok, bad := lambdaevent.Deliveries(events.SQSEvent{})
	require.Empty(t, ok)
	require.Empty(t, bad)
}

func TestBatchResponse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		failed [][]string
		want   string
	}{
		{"none", nil, `{"batchItemFailures":[]}`},
		{"one list", [][]string{{"a", "b"}}, `{"batchItemFailures":[{"itemIdentifier":"a"},{"itemIdentifier":"b"}]}`},
		{"merged without repeats", [][]string{{"a", "b"}, {"b", "c"}}, `{"batchItemFailures":[{"itemIdentifier":"a"},{"itemIdentifier":"b"},{"itemIdentifier":"c"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(lambdaevent.BatchResponse(tc.failed...))
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestConsumerResponse(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cases := []struct {
		name string
		res  consumer.Result
		bad  []lambdaevent.RecordError
		want []string
	}{
		{name: "all acknowledged", res: consumer.Result{Items: []consumer.MessageOutcome{{MessageID: "a"}, {MessageID: "b"}}}, want: []string{}},
		{name: "failed are redelivered", res: consumer.Result{Failed: []consumer.Failure{{MessageID: "a", Err: boom}}}, want: []string{"a"}},
		{name: "dead-lettered are acknowledged", res: consumer.Result{DeadLettered: []consumer.Failure{{MessageID: "d", Err: boom}}}, want: []string{}},
		{
			name: "untranslated records are redelivered",
			res:  consumer.Result{Failed: []consumer.Failure{{MessageID: "a", Err: boom}}, DeadLettered: []consumer.Failure{{MessageID: "d", Err: boom}}},
			bad:  []lambdaevent.RecordError{{MessageID: "x", Err: boom}, {MessageID: "", Err: boom}},
			want: []string{"a", "x", ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := lambdaevent.ConsumerResponse(tc.res, tc.bad)
			got := []string{}
			for _, f := range resp.BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// Every record of an SQS event, whatever its content, is either a
// delivery or a reported record error: nothing is dropped, nothing panics.
func FuzzDeliveries(f *testing.F) {
	f.Add([]byte(`{"Records":[{"messageId":"m1","body":"{}","attributes":{"ApproximateReceiveCount":"2","SentTimestamp":"1700000000000"}}]}`))
	f.Add([]byte(`{"Records":[{"messageId":"","body":"x"},{"messageId":"m2","attributes":{"ApproximateReceiveCount":"-3"}}]}`))
	f.Add([]byte(`{"Records":[{"messageId":"m3","messageAttributes":{"a":{"dataType":"String","stringValue":"v"}}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev events.SQSEvent
		if json.Unmarshal(raw, &ev) != nil {
			return // the Lambda runtime refuses the invocation itself
		}
		ok, bad := lambdaevent.Deliveries(ev)
		if len(ok)+len(bad) != len(ev.Records) {
			t.Fatalf("%d records → %d deliveries + %d errors", len(ev.Records), len(ok), len(bad))
		}
		for _, d := range ok {
			if d.MessageID == "" || d.ReceiveCount < 1 {
				t.Fatalf("delivery %+v", d)
			}
		}
	})
}
