package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Depth counts a queue's messages.
type Depth struct {
	Visible  int // ready to be received
	InFlight int // received, not yet deleted nor visible again
	Delayed  int // not yet visible (SQS delay queues and delayed sends)
	// Approximate is set when the backend's counts are eventually
	// consistent (SQS: up to about a minute behind).
	Approximate bool
}

// Total is every message the queue holds.
func (d Depth) Total() int { return d.Visible + d.InFlight + d.Delayed }

// Peeked is a message seen without consuming it.
type Peeked struct {
	MessageID  string
	Body       []byte
	Attributes map[string]string
	// ReceiveCount is the receives the queue counted. The embedded queue
	// restarts at 0 when a message moves to another queue; SQS keeps
	// counting, and counts a peek (Peek receives) as a receive.
	ReceiveCount int
	SentAt       time.Time
}

// Counter is an optional ability of a queue: counting its messages.
// Callers find it by type assertion; Ops.Depth uses it when the queue has
// it. There is no portable way to count.
type Counter interface {
	// Depth counts the queue's messages. Where the backend's counts are
	// eventually consistent it sets Depth.Approximate.
	Depth(ctx context.Context) (Depth, error)
}

// Peeker is an optional ability of a queue: looking at its messages
// without consuming them. Callers find it by type assertion; Ops.Peek
// uses it when the queue has it, else PeekByReceiving.
type Peeker interface {
	// Peek returns up to max messages (max <= 0: all) without consuming
	// them: a later receive still gets each of them. Where the queue has no
	// way to look without receiving, each is received, hidden for an
	// instant and made visible again (PeekByReceiving), which counts as a
	// receive: peek at a dead-letter queue, never at a queue with a
	// dead-letter policy.
	Peek(ctx context.Context, max int) ([]Peeked, error)
}

// Mover is an optional ability of a queue: moving its messages to another
// queue (redriving a dead-letter queue). Callers find it by type
// assertion; Ops.MoveTo uses it when the queue has it, else
// MoveByReceiving.
type Mover interface {
	// MoveTo moves up to max visible messages (max <= 0: all) to dst,
	// oldest first, and returns how many moved. Each keeps its body (and
	// so its idempotency key) and its attributes; the dead-letter reason
	// the consumer records in an attribute may be kept or dropped, and the
	// consumer writes a new one if the message dead-letters again. Where a
	// move is a send and a delete, the send comes first: a failure in
	// between leaves the message in both queues, which the idempotent
	// consumer absorbs. dst must be another queue than the one moved from.
	MoveTo(ctx context.Context, dst Sender, max int) (int, error)
}

// Ops are what an operator does to a queue besides sending and receiving:
// count, look at and move its messages. Each method uses the queue's own
// ability (Counter, Peeker, Mover) where it has it, else the portable one
// built on Receiver and Sender. The zero value is not usable; make one
// with OpsOf.
type Ops struct{ q Receiver }

var (
	_ Counter = Ops{}
	_ Peeker  = Ops{}
	_ Mover   = Ops{}
)

// OpsOf returns q's operator abilities.
func OpsOf(q Receiver) Ops { return Ops{q} }

// Depth is Counter.Depth when the queue is a Counter. Otherwise it cannot
// count: it returns an error matching errors.ErrUnsupported.
func (o Ops) Depth(ctx context.Context) (Depth, error) {
	if c, ok := o.q.(Counter); ok {
		return c.Depth(ctx)
	}
	return Depth{}, fmt.Errorf("depth: %w by this queue (%T)", errors.ErrUnsupported, o.q)
}

// Peek is Peeker.Peek when the queue is a Peeker, else PeekByReceiving.
func (o Ops) Peek(ctx context.Context, max int) ([]Peeked, error) {
	if p, ok := o.q.(Peeker); ok {
		return p.Peek(ctx, max)
	}
	return PeekByReceiving(ctx, o.q, max)
}

// MoveTo is Mover.MoveTo when the queue is a Mover, else MoveByReceiving.
func (o Ops) MoveTo(ctx context.Context, dst Sender, max int) (int, error) {
	if m, ok := o.q.(Mover); ok {
		return m.MoveTo(ctx, dst, max)
	}
	return MoveByReceiving(ctx, o.q, dst, max)
}

// peekHide is how long PeekByReceiving and MoveByReceiving hide the
// messages they hold.
const peekHide = time.Minute

// peekWait is the long poll of their receives: SQS's short polls sample a
// subset of its servers and may miss messages.
const peekWait = time.Second

// PeekByReceiving is Peeker.Peek built on r alone, for queues that cannot
// look without receiving: it receives up to max visible messages (max <=
// 0: all), hiding each for a minute until it has them all, then makes them
// visible again. Each peeked message counts a receive. It stops at the
// first receive that finds no message it has not seen.
func PeekByReceiving(ctx context.Context, r Receiver, max int) ([]Peeked, error) {
	var out []Peeked
	var handles []string
	seen := map[string]bool{}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		for _, h := range handles {
			_ = r.ChangeVisibility(ctx, ChangeVisibilityParams{ReceiptHandle: h, Now: time.Now()})
		}
	}()
	for max <= 0 || len(out) < max {
		n := MaxBatch
		if max > 0 {
			n = min(n, max-len(out))
		}
		ds, err := r.Receive(ctx, ReceiveParams{Max: n, Visibility: peekHide, Wait: peekWait, Now: time.Now()})
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
			out = append(out, Peeked{MessageID: d.MessageID, Body: d.Body, Attributes: d.Attributes, ReceiveCount: d.ReceiveCount, SentAt: d.SentAt})
		}
		if fresh == 0 {
			break
		}
	}
	return out, nil
}

// MoveByReceiving is Mover.MoveTo built on src's Receiver and dst's
// Sender: it receives up to max visible messages of src (max <= 0: all),
// a batch at a time, sends each batch to dst with its bodies and
// attributes unchanged, then deletes what was sent. It stops at the first
// receive that finds nothing. Messages a failed send left in src are made
// visible again at once.
func MoveByReceiving(ctx context.Context, src Receiver, dst Sender, max int) (int, error) {
	moved := 0
	for max <= 0 || moved < max {
		n := MaxBatch
		if max > 0 {
			n = min(n, max-moved)
		}
		ds, err := src.Receive(ctx, ReceiveParams{Max: n, Visibility: peekHide, Wait: peekWait, Now: time.Now()})
		if err != nil {
			return moved, fmt.Errorf("move: receive: %w", err)
		}
		if len(ds) == 0 {
			break
		}
		msgs := make([]Message, len(ds))
		for i, d := range ds {
			msgs[i] = Message{ID: strconv.Itoa(i), Body: d.Body, Attributes: d.Attributes}
		}
		sent, err := SendAll(ctx, dst, msgs, nil)
		for _, d := range ds[:sent] {
			if derr := src.Delete(ctx, d.ReceiptHandle); derr != nil {
				return moved, fmt.Errorf("move: message %s sent but not deleted (it will be delivered twice, harmlessly): %w", d.MessageID, derr)
			}
			moved++
		}
		if err != nil {
			for _, d := range ds[sent:] {
				_ = src.ChangeVisibility(context.WithoutCancel(ctx), ChangeVisibilityParams{ReceiptHandle: d.ReceiptHandle, Now: time.Now()})
			}
			return moved, fmt.Errorf("move: send: %w", err)
		}
	}
	return moved, nil
}

// Purge deletes up to max visible messages of the queue (max <= 0: all)
// and returns how many it deleted: PurgeByReceiving, on every queue. (No
// adapter's own purge fits: SQS's PurgeQueue empties the whole queue,
// messages in flight included, at most once a minute, and counts
// nothing.)
func (o Ops) Purge(ctx context.Context, max int) (int, error) {
	return PurgeByReceiving(ctx, o.q, max)
}

// PurgeByReceiving deletes up to max visible messages of r (max <= 0:
// all), a batch at a time: it receives them, hidden for a minute, and
// deletes what it received. It stops at the first receive that finds
// nothing; messages in flight (received by someone else) are left. Each
// deleted message counts a receive first: purge a dead-letter queue,
// never a queue with a dead-letter policy (a receive there may move a
// message instead). What a failed delete left is visible again after the
// minute.
func PurgeByReceiving(ctx context.Context, r Receiver, max int) (int, error) {
	purged := 0
	for max <= 0 || purged < max {
		n := MaxBatch
		if max > 0 {
			n = min(n, max-purged)
		}
		ds, err := r.Receive(ctx, ReceiveParams{Max: n, Visibility: peekHide, Wait: peekWait, Now: time.Now()})
		if err != nil {
			return purged, fmt.Errorf("purge: receive: %w", err)
		}
		if len(ds) == 0 {
			break
		}
		handles := make([]string, len(ds))
		for i, d := range ds {
			handles[i] = d.ReceiptHandle
		}
		err = DeleteAll(ctx, r, handles)
		var be *BatchError
		switch {
		case err == nil:
			purged += len(ds)
		case errors.As(err, &be):
			purged += len(ds) - len(be.Failed)
			return purged, fmt.Errorf("purge: %d message(s) not deleted: %w", len(be.Failed), err)
		default:
			return purged, fmt.Errorf("purge: delete: %w", err)
		}
	}
	return purged, nil
}
