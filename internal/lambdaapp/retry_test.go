package lambdaapp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/queue"
)

// On Lambda, an item whose processor asks for a delay (RetryAfter) is
// reported failed and its message hidden for that delay on the queue it
// came from (ChangeMessageVisibility on SQS), so the event source does
// not deliver it before; a failure that names no delay keeps the queue's
// visibility timeout.
func TestConsumerHidesAFailedMessageForItsRetryDelay(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	now := fixedAt
	clock := func() time.Time { return now }
	job := fx.Job(nil)
	job.Processor = baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
		switch t.Asset {
		case "EURUSD":
			return nil, baton.RetryAfter(90*time.Second, errors.New("HTTP 429"))
		case "USDJPY":
			return nil, errors.New("HTTP 503")
		}
		return []byte("1.0"), nil
	})
	p := params(b, clock)
	p.Jobs = baton.MustCatalog(job)
	co, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	_, err = co.Handle(context.Background(), []byte(`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`))
	require.NoError(t, err)

	work := b.Work.(queue.Receiver)
	msgs, err := work.Receive(context.Background(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: now})
	require.NoError(t, err)
	require.Len(t, msgs, len(fx.Assets))
	spy := &timeoutSpy{Sender: b.Work, vc: b.Work.(queue.VisibilityChanger), timeouts: map[string]time.Duration{}}
	p.Queue = spy
	c, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	var ev events.SQSEvent
	byID := map[string]string{}
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.MessageID, ReceiptHandle: m.ReceiptHandle, Body: string(m.Body),
			EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:baton-work",
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
		byID[m.ReceiptHandle] = m.MessageID
	}
	resp, err := c.Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 2)

	spy.mu.Lock()
	hidden := map[string]time.Duration{}
	for handle, d := range spy.timeouts {
		hidden[byID[handle]] = d
	}
	spy.mu.Unlock()
	var rateLimited string
	for _, f := range resp.BatchItemFailures {
		if d, ok := hidden[f.ItemIdentifier]; ok {
			require.Equal(t, 90*time.Second, d)
			rateLimited = f.ItemIdentifier
		}
	}
	require.NotEmpty(t, rateLimited, "the RetryAfter message was hidden for its delay: %v", hidden)
	require.Len(t, hidden, 1, "a failure without a delay keeps the queue's visibility timeout")

	// Not delivered before its delay; delivered after it.
	again, err := work.Receive(context.Background(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: now.Add(89 * time.Second)})
	require.NoError(t, err)
	for _, m := range again {
		require.NotEqual(t, rateLimited, m.MessageID, "delivered before its retry delay")
	}
	later, err := work.Receive(context.Background(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: now.Add(91 * time.Second)})
	require.NoError(t, err)
	var ids []string
	for _, m := range later {
		ids = append(ids, m.MessageID)
	}
	require.Contains(t, ids, rateLimited)
}

// timeoutSpy records the visibility timeout set on each receipt handle.
type timeoutSpy struct {
	queue.Sender
	vc       queue.VisibilityChanger
	mu       sync.Mutex
	timeouts map[string]time.Duration
}

func (s *timeoutSpy) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	s.mu.Lock()
	s.timeouts[p.ReceiptHandle] = p.Timeout
	s.mu.Unlock()
	return s.vc.ChangeVisibility(ctx, p)
}
