package cli

import (
	"context"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/engine"
)

// queueOps returns q's operator abilities: SQS's own where q is an SQS
// queue (the engine stays free of AWS packages), else the engine's.
func queueOps(q engine.Queue) engine.QueueOps {
	if s, ok := q.(*awssqs.Queue); ok {
		return sqsOps{s}
	}
	return engine.OpsOf(q)
}

// sqsOps are the operator abilities of an SQS queue.
type sqsOps struct{ q *awssqs.Queue }

// Depth is SQS's approximate counts (eventually consistent).
func (o sqsOps) Depth(ctx context.Context) (engine.QueueDepth, error) {
	d, err := o.q.Depth(ctx)
	return engine.QueueDepth{Visible: d.Visible, InFlight: d.InFlight, Delayed: d.Delayed, Approximate: true}, err
}

// Peek receives and releases: SQS has no other way to look.
func (o sqsOps) Peek(ctx context.Context, max int) ([]engine.QueuedMessage, error) {
	return engine.PortableOps(o.q).Peek(ctx, max)
}

// MoveTo moves everything with SQS's message-move task (the redrive the
// console offers, which keeps attributes) when max <= 0 and dst is an SQS
// queue; a bounded move receives, sends and deletes.
func (o sqsOps) MoveTo(ctx context.Context, dst engine.Queue, max int) (int, error) {
	if d, ok := dst.(*awssqs.Queue); ok && max <= 0 {
		n, err := o.q.MoveAll(ctx, d, 0, 0)
		return int(n), err
	}
	return engine.PortableOps(o.q).MoveTo(ctx, dst, max)
}
