package lambdaapp_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/queue"
)

// A job on a queue of its own is fanned out there, the others on the work
// queue; a handler without the queue's URL refuses to start, naming the
// variable.
func TestJobQueueRouting(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	noisyQ, err := b.JobQueueFunc(context.Background(), "noisy")
	require.NoError(t, err)
	noisy := fx.Job(nil)
	noisy.Name, noisy.Queue = "noisy", baton.JobQueue{Name: "noisy", MaxConcurrency: 3}
	inner := noisy.Processor
	noisy.Processor = baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		if err := t.Heartbeat(ctx); err != nil { // a long item renews its claim
			return nil, err
		}
		return inner.Process(ctx, t)
	})
	p := params(b, func() time.Time { return fixedAt })
	p.Jobs = baton.MustCatalog(fx.Job(nil), noisy)

	_, err = lambdaapp.NewCoordinatorHandler(p)
	require.ErrorContains(t, err, "no URL for queue noisy of jobs [noisy]: set it in BATON_JOB_QUEUE_URLS")
	_, err = lambdaapp.NewConsumerHandler(p)
	require.ErrorContains(t, err, "no URL for queue noisy")

	p.JobQueues = map[string]queue.Sender{"noisy": noisyQ}
	h, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	for _, job := range []string{"fx", "noisy"} {
		_, err := h.Handle(context.Background(), []byte(`{"job":"`+job+`","scheduledTime":"2026-11-21T12:01:00Z"}`))
		require.NoError(t, err)
	}
	depth := func(q any) int {
		d, err := queue.OpsOf(q.(queue.Receiver)).Depth(context.Background())
		require.NoError(t, err)
		return d.Total()
	}
	require.Equal(t, len(fx.Assets), depth(b.Work), "fx on the work queue")
	require.Equal(t, len(fx.Assets), depth(noisyQ), "noisy on its own")

	// The consumer handles a batch from the noisy queue (its ARN names it).
	msgs, err := noisyQ.(queue.Receiver).Receive(context.Background(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
	require.NoError(t, err)
	require.NotEmpty(t, msgs)
	seen := &visibilitySpy{Sender: noisyQ, vc: noisyQ.(queue.VisibilityChanger)}
	shared := &visibilitySpy{Sender: b.Work, vc: b.Work}
	p.Queue, p.JobQueues["noisy"] = shared, seen
	p.Sources = map[string]queue.Sender{"baton-noisy": seen}
	c, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	var ev events.SQSEvent
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.MessageID, ReceiptHandle: m.ReceiptHandle, Body: string(m.Body),
			EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:baton-noisy",
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	resp, err := c.Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, len(msgs), int(seen.changes.Load()), "each heartbeat extended its message on the noisy queue")
	require.Zero(t, shared.changes.Load(), "not on the work queue")
}

// visibilitySpy counts the visibility changes made through it.
type visibilitySpy struct {
	queue.Sender
	vc      queue.VisibilityChanger
	changes atomic.Int32
}

func (s *visibilitySpy) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	s.changes.Add(1)
	return s.vc.ChangeVisibility(ctx, p)
}
