package lambdaapp_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// The Lambda consumer starts chained runs with the chain starter built
// with the handler (exec.Core), one for every invocation: a chained job
// with a queue of its own gets its items there, never on the shared work
// queue, tick after tick; consumed from there, the chained runs complete.
// The HTTP twin is httpapp's TestPushChainedJobOnItsOwnQueue.
func TestConsumerChainedJobOnItsOwnQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBackend(t)
	ok := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte(`{}`), nil })
	own, err := b.JobQueueFunc(ctx, "own")
	require.NoError(t, err)
	p := params(b, func() time.Time { return fixedAt })
	p.Jobs = baton.MustCatalog(
		baton.Job{Name: "up", Schedule: "rate(1 minute)", Assets: []string{"u1", "u2"}, Processor: ok, Chains: []baton.Chain{{Job: "down"}}},
		baton.Job{Name: "down", Assets: []string{"d1", "d2", "d3"}, Processor: ok, Queue: baton.JobQueue{Name: "own"}},
	)
	p.JobQueues = map[string]queue.Sender{"own": own}
	p.Sources = map[string]queue.Sender{"baton-own": own}
	coord, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	cons, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	built := lambdaapp.CoreOf(cons)
	require.NotNil(t, built, "the core, and its chain starter, are built with the handler")

	for _, nominal := range []time.Time{tick.Add(-time.Minute), tick} {
		_, err := coord.Handle(ctx, []byte(`{"job":"up","scheduledTime":"`+nominal.Format(time.RFC3339)+`"}`))
		require.NoError(t, err)
		// One invocation consumes the parent's items and finishes its run.
		require.Equal(t, map[string]int{"up": 2}, consumeAll(t, cons, b.Work, "baton-work"), "the parent's items, on the work queue")
		run, err := b.Ledger.GetRun(ctx, "up", nominal)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State)

		require.Empty(t, consumeAll(t, cons, b.Work, "baton-work"), "nothing of the chained job on the shared work queue")
		require.Equal(t, map[string]int{"down": 3}, consumeAll(t, cons, own, "baton-own"), "the chained job's items, on its own queue")
		job, at := ledger.TickOf(ledger.RunID{Job: "down", Submission: baton.ChainKey(run.ID)})
		child, err := b.Ledger.GetRun(ctx, job, at)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, child.State, "the chained run completed from its own queue")
	}
	require.Same(t, built, lambdaapp.CoreOf(cons), "no invocation builds another core")
}

// consumeAll hands what q holds now to h in one batch from the SQS queue
// named name, deletes the messages not reported failed, and returns the
// items handled by job.
func consumeAll(t *testing.T, h *lambdaapp.ConsumerHandler, q backend.Queue, name string) map[string]int {
	t.Helper()
	ctx := context.Background()
	msgs, err := q.Receive(ctx, queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
	require.NoError(t, err)
	jobs := map[string]int{}
	if len(msgs) == 0 {
		return jobs
	}
	var ev events.SQSEvent
	for _, m := range msgs {
		dm, err := message.Decode(m.Body)
		require.NoError(t, err)
		k, err := dm.ItemKey()
		require.NoError(t, err)
		jobs[k.Run.Job]++
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.MessageID, ReceiptHandle: m.ReceiptHandle, Body: string(m.Body),
			EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:" + name,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	for _, m := range msgs {
		require.NoError(t, q.Delete(ctx, m.ReceiptHandle))
	}
	return jobs
}
