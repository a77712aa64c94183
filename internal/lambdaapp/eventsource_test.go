package lambdaapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

func TestEventSourceFeedsTheConsumerHandler(t *testing.T) {
	t.Parallel()
	tb := setup(t, setupOpts{})
	_, err := invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, fixture(t, "coordinator-scheduled.json"))
	require.NoError(t, err)

	es := &lambdaapp.EventSource{Handler: tb.consumer, QueueARN: "arn:aws:sqs:us-east-1:123456789012:work", Region: "us-east-1"}
	msgs := drain(t, tb.backend.Work)
	require.Len(t, msgs, 7)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	require.Empty(t, es.Handle(ctx, deadline, msgs))
	its := items(t, tb, 1)
	for _, a := range fx.Assets {
		require.Equal(t, ledger.ItemSucceeded, its[a].State, a)
	}

	// The derived item, enqueued by the last input (maybe by two inputs
	// completing at once: the enqueue is idempotent, not unique), through a
	// second batch. Copies in one batch race for one claim: a copy that
	// finds the item held fails, and its redelivery is a duplicate.
	msgs = drain(t, tb.backend.Work)
	require.Equal(t, runKeys(1, fx.DXY), slices.Compact(keysOf(t, msgs)))
	if failed := es.Handle(ctx, deadline, msgs); len(failed) > 0 {
		require.Less(t, len(failed), len(msgs), "one copy is processed")
		var again []queue.Delivery
		for _, m := range msgs {
			if slices.Contains(failed, m.MessageID) {
				again = append(again, m)
			}
		}
		require.Empty(t, es.Handle(ctx, deadline, again))
	}
	require.Equal(t, ledger.ItemSucceeded, items(t, tb, 1)[fx.DXY].State)
}

// fakeHandler is a lambda.Handler made of a function.
type fakeHandler func(ctx context.Context, payload []byte) ([]byte, error)

func (f fakeHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

func TestEventSourceBatchFailures(t *testing.T) {
	t.Parallel()
	msgs := []queue.Delivery{
		{MessageID: "m1", ReceiptHandle: "r1", Body: []byte("a"), ReceiveCount: 1},
		{MessageID: "m2", ReceiptHandle: "r2", Body: []byte("b"), ReceiveCount: 3},
	}
	respond := func(ids ...string) fakeHandler {
		return func(context.Context, []byte) ([]byte, error) {
			r := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
			for _, id := range ids {
				r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
			return json.Marshal(r)
		}
	}
	cases := []struct {
		name        string
		handlerFunc fakeHandler
		want        []string
	}{
		{"all processed", respond(), nil},
		{"partial", respond("m2"), []string{"m2"}},
		{"unknown identifier fails the batch", respond("m2", "m9"), []string{"m1", "m2"}},
		{"empty identifier fails the batch", respond(""), []string{"m1", "m2"}},
		{"error fails the batch", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") }, []string{"m1", "m2"}},
		{"panic fails the batch", func(context.Context, []byte) ([]byte, error) { panic("boom") }, []string{"m1", "m2"}},
		{"response not a batch response", func(context.Context, []byte) ([]byte, error) { return []byte(`"ok"`), nil }, []string{"m1", "m2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			es := &lambdaapp.EventSource{Handler: tc.handlerFunc}
			require.Equal(t, tc.want, es.Handle(t.Context(), time.Time{}, msgs))
		})
	}

	t.Run("invocation", func(t *testing.T) {
		t.Parallel()
		var got events.SQSEvent
		var requestID string
		var deadline time.Time
		es := &lambdaapp.EventSource{
			QueueARN: "arn:aws:sqs:eu-west-1:123456789012:work", Region: "eu-west-1",
			Handler: fakeHandler(func(ctx context.Context, payload []byte) ([]byte, error) {
				require.NoError(t, json.Unmarshal(payload, &got))
				lc, ok := lambdacontext.FromContext(ctx)
				require.True(t, ok)
				requestID = lc.AwsRequestID
				deadline, _ = ctx.Deadline()
				return respond()(ctx, payload)
			}),
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		want, _ := ctx.Deadline()
		require.Empty(t, es.Handle(ctx, want, msgs))
		require.Len(t, got.Records, 2)
		require.Equal(t, "m2", got.Records[1].MessageId)
		require.Equal(t, "3", got.Records[1].Attributes["ApproximateReceiveCount"])
		require.Equal(t, "eu-west-1", got.Records[0].AWSRegion)
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, requestID)
		require.Equal(t, want, deadline)
	})
}
