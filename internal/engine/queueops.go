package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
)

// QueueDepth counts a queue's messages.
type QueueDepth struct {
	Visible  int // ready to be received
	InFlight int // received, not yet deleted nor visible again
	Delayed  int // not yet visible (SQS only)
	// Approximate is set when the backend's counts are eventually
	// consistent (SQS: up to about a minute behind).
	Approximate bool
}

// Total is every message the queue holds.
func (d QueueDepth) Total() int { return d.Visible + d.InFlight + d.Delayed }

// QueuedMessage is a message seen without consuming it.
type QueuedMessage struct {
	MessageID  string
	Body       []byte
	Attributes map[string]string
	// ReceiveCount is the receives the queue counted. The embedded queue
	// restarts at 0 when a message moves to another queue; SQS keeps
	// counting, and counts a peek (Peek receives) as a receive.
	ReceiveCount int
	SentAt       time.Time
}

// QueueOps is what an operator does to a queue besides sending and
// receiving: count, look at and move its messages. OpsOf returns the
// queue's own implementation where it has one, else a portable one built
// on queue.Sender and queue.Receiver.
type QueueOps interface {
	// Depth counts the queue's messages. The portable implementation
	// cannot count: it returns an error matching errors.ErrUnsupported.
	Depth(ctx context.Context) (QueueDepth, error)
	// Peek returns up to max messages (max <= 0: all) without consuming
	// them. Where the queue has no way to look without receiving, each is
	// received, hidden for an instant and made visible again, which counts
	// as a receive: peek at a dead-letter queue, never at a queue with a
	// redrive policy.
	Peek(ctx context.Context, max int) ([]QueuedMessage, error)
	// MoveTo moves up to max visible messages (max <= 0: all) to dst,
	// oldest first, and returns how many moved. Each keeps its body (and
	// so its idempotency key) and its attributes; the dead-letter reason
	// (message.AttrError) may be kept or dropped, and the consumer writes a
	// new one if the message dead-letters again. Where a move is a send
	// and a delete, the send comes first: a failure in between leaves the
	// message in both queues, which the idempotent consumer absorbs.
	MoveTo(ctx context.Context, dst Queue, max int) (int, error)
}

// OpsOf returns q's operator abilities: q itself when it implements
// QueueOps, the embedded queue's own, else the portable ones.
func OpsOf(q Queue) QueueOps {
	switch q := q.(type) {
	case QueueOps:
		return q
	case *sqlite.Queue:
		return sqliteOps{q}
	}
	return PortableOps(q)
}

// PortableOps returns QueueOps built on q's Sender and Receiver only, for
// adapters that implement part of QueueOps themselves.
func PortableOps(q Queue) QueueOps { return portableOps{q} }

type sqliteOps struct{ q *sqlite.Queue }

func (o sqliteOps) Depth(ctx context.Context) (QueueDepth, error) {
	v, f, err := o.q.Depth(ctx)
	return QueueDepth{Visible: v, InFlight: f}, err
}

func (o sqliteOps) Peek(ctx context.Context, max int) ([]QueuedMessage, error) {
	ms, err := o.q.Peek(ctx, max)
	if err != nil {
		return nil, err
	}
	out := make([]QueuedMessage, len(ms))
	for i, m := range ms {
		out[i] = QueuedMessage{MessageID: m.MessageID, Body: m.Body, Attributes: m.Attributes, ReceiveCount: m.ReceiveCount, SentAt: m.SentAt}
	}
	return out, nil
}

// MoveTo uses the embedded queue's one-statement move when dst is in the
// same file: the message keeps its id, and its dead-letter reason (the
// consumer rewrites it if the message dead-letters again).
func (o sqliteOps) MoveTo(ctx context.Context, dst Queue, max int) (int, error) {
	if d, ok := dst.(*sqlite.Queue); ok {
		return o.q.MoveTo(ctx, d, max)
	}
	return portableOps{o.q}.MoveTo(ctx, dst, max)
}

// portableOps works on any queue.Sender and queue.Receiver.
type portableOps struct{ q Queue }

// peekHide is how long Peek and MoveTo hide the messages they hold.
const peekHide = time.Minute

// peekWait is the long poll of Peek's and MoveTo's receives: SQS's short
// polls sample a subset of its servers and may miss messages.
const peekWait = time.Second

func (o portableOps) Depth(ctx context.Context) (QueueDepth, error) {
	return QueueDepth{}, fmt.Errorf("depth: %w by this queue", errors.ErrUnsupported)
}

func (o portableOps) Peek(ctx context.Context, max int) ([]QueuedMessage, error) {
	var out []QueuedMessage
	var handles []string
	seen := map[string]bool{}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		for _, h := range handles {
			_ = o.q.ChangeVisibility(ctx, queue.ChangeVisibilityParams{ReceiptHandle: h, Now: time.Now()})
		}
	}()
	for max <= 0 || len(out) < max {
		n := queue.MaxBatch
		if max > 0 {
			n = min(n, max-len(out))
		}
		ds, err := o.q.Receive(ctx, queue.ReceiveParams{Max: n, Visibility: peekHide, Wait: peekWait, Now: time.Now()})
		if err != nil {
			return out, fmt.Errorf("peek: %w", err)
		}
		fresh := 0
		for _, d := range ds {
			handles = append(handles, d.ReceiptHandle)
			if seen[d.MessageID] {
				continue
			}
			seen[d.MessageID] = true
			fresh++
			out = append(out, QueuedMessage{MessageID: d.MessageID, Body: d.Body, Attributes: d.Attributes, ReceiveCount: d.ReceiveCount, SentAt: d.SentAt})
		}
		if fresh == 0 {
			break
		}
	}
	return out, nil
}

func (o portableOps) MoveTo(ctx context.Context, dst Queue, max int) (int, error) {
	moved := 0
	for max <= 0 || moved < max {
		n := queue.MaxBatch
		if max > 0 {
			n = min(n, max-moved)
		}
		ds, err := o.q.Receive(ctx, queue.ReceiveParams{Max: n, Visibility: peekHide, Wait: peekWait, Now: time.Now()})
		if err != nil {
			return moved, fmt.Errorf("move: receive: %w", err)
		}
		if len(ds) == 0 {
			break
		}
		msgs := make([]queue.Message, len(ds))
		for i, d := range ds {
			attrs := maps.Clone(d.Attributes)
			delete(attrs, message.AttrError)
			msgs[i] = queue.Message{ID: strconv.Itoa(i), Body: d.Body, Attributes: attrs}
		}
		sent, err := queue.SendAll(ctx, dst, msgs, nil)
		for _, d := range ds[:sent] {
			if derr := o.q.Delete(ctx, d.ReceiptHandle); derr != nil {
				return moved, fmt.Errorf("move: message %s sent but not deleted (it will be delivered twice, harmlessly): %w", d.MessageID, derr)
			}
			moved++
		}
		if err != nil {
			for _, d := range ds[sent:] {
				_ = o.q.ChangeVisibility(context.WithoutCancel(ctx), queue.ChangeVisibilityParams{ReceiptHandle: d.ReceiptHandle, Now: time.Now()})
			}
			return moved, fmt.Errorf("move: send: %w", err)
		}
	}
	return moved, nil
}
