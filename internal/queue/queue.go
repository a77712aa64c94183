// Package queue is the port for the work queue: at-least-once delivery of
// one message per item.
//
// Sender is all the core needs (the coordinator fans out, the consumer
// enqueues derived items and forwards dead letters). Receiver is what a
// poller needs where no managed event source delivers the messages (the
// embedded runtime, a long-lived worker outside Lambda).
//
// Operators also count, look at and move a queue's messages. These are
// optional abilities, small interfaces an adapter implements when its
// backend can do better than the portable way: Counter, Peeker and Mover.
// OpsOf finds them by type assertion and falls back to PeekByReceiving and
// MoveByReceiving, built on Receiver and Sender; counting has no fallback
// (an error matching errors.ErrUnsupported).
//
// Implementations must pass the conformance suite in
// internal/queue/queuetest.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxBatch is the most entries one SendBatch call takes (as SQS).
const MaxBatch = 10

// MaxBatchBytes is the most body+attribute bytes one SendBatch call takes (as SQS).
const MaxBatchBytes = 256 * 1024

// Sentinel errors.
var (
	// ErrBatchTooLarge: more than MaxBatch entries, more than MaxBatchBytes,
	// an empty batch or duplicate entry ids. Nothing was sent.
	ErrBatchTooLarge = errors.New("batch too large")
	// ErrInvalidReceipt: the receipt handle is unknown or no longer valid
	// (the message was deleted, or received again by someone else).
	ErrInvalidReceipt = errors.New("invalid receipt handle")
	// ErrNotFound: the queue does not exist. SendBatch and Receive fail
	// with it as a whole (never a *BatchError, never an empty receive; a
	// long poll fails at once).
	ErrNotFound = errors.New("queue not found")
)

// Message is an outgoing message.
type Message struct {
	ID         string // entry id, unique within one batch
	Body       []byte
	Attributes map[string]string
	// Delay hides the message this long after it is sent (SQS's
	// DelaySeconds, rounded up to a second there): 0 to MaxSendDelay.
	Delay time.Duration
}

// MaxSendDelay is the longest Message.Delay: SQS's 15 minutes.
const MaxSendDelay = 15 * time.Minute

// Size is the bytes the message counts against MaxBatchBytes.
func (m Message) Size() int {
	n := len(m.Body)
	for k, v := range m.Attributes {
		n += len(k) + len(v)
	}
	return n
}

// EntryError is the failure of one entry of a batch.
type EntryError struct {
	ID  string
	Err error
}

// BatchError lists the entries of a batch that failed: not sent by
// SendBatch, not deleted by DeleteBatch; the others were. Sending or
// deleting those entries again is safe.
type BatchError struct {
	Failed []EntryError
}

func (e *BatchError) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for _, f := range e.Failed {
		parts = append(parts, fmt.Sprintf("%s: %v", f.ID, f.Err))
	}
	return fmt.Sprintf("%d entries failed: %s", len(e.Failed), strings.Join(parts, "; "))
}

// Sender sends messages. It may be called concurrently.
type Sender interface {
	// SendBatch sends 1..MaxBatch messages totalling at most MaxBatchBytes.
	// It returns nil when every entry was accepted, a *BatchError when some
	// were not (the rest were sent), ErrBatchTooLarge (nothing sent) when
	// the batch breaks the limits, or another error when the call failed as
	// a whole (some entries may have been sent).
	SendBatch(ctx context.Context, msgs []Message) error
}

// Delivery is a received message.
type Delivery struct {
	MessageID     string // assigned by the queue; stable across receives
	ReceiptHandle string // valid until the next receive of the message
	Body          []byte
	Attributes    map[string]string
	ReceiveCount  int       // 1 on the first receive
	SentAt        time.Time // when the queue accepted the message
}

// ReceiveParams are the inputs of Receiver.Receive.
type ReceiveParams struct {
	Max        int           // 1..MaxBatch
	Visibility time.Duration // hidden from other receivers this long
	Wait       time.Duration // long poll: wait up to this long for a first message
	Now        time.Time     // the caller's clock (adapters with their own clock may ignore it)
}

// ChangeVisibilityParams are the inputs of Receiver.ChangeVisibility.
type ChangeVisibilityParams struct {
	ReceiptHandle string
	Timeout       time.Duration // visible again Timeout after Now; 0: at once
	Now           time.Time
}

// Receiver receives, deletes and hides messages. It may be called
// concurrently.
type Receiver interface {
	// Receive returns up to Max visible messages and hides each for
	// Visibility, incrementing its ReceiveCount. A queue with a dead-letter
	// policy moves a message whose ReceiveCount would exceed the policy's
	// maximum to its dead-letter queue instead of returning it. With no
	// message visible it waits up to Wait, then returns an empty slice.
	Receive(ctx context.Context, p ReceiveParams) ([]Delivery, error)

	// Delete removes the message received with the handle. It returns
	// ErrInvalidReceipt when the handle is not the latest for a message
	// still in the queue, where the backend can tell.
	Delete(ctx context.Context, receiptHandle string) error

	VisibilityChanger
}

// VisibilityChanger hides a received message for longer (or shows it
// sooner). Every Receiver is one; a Sender may be one too, an optional
// ability found by type assertion: the consumer extends a long item's
// message with its claim (a heartbeat) when its queue can.
type VisibilityChanger interface {
	// ChangeVisibility makes the message received with the handle visible
	// again Timeout after Now. It returns ErrInvalidReceipt when the
	// handle is not the latest for a message still in the queue, where the
	// backend can tell.
	ChangeVisibility(ctx context.Context, p ChangeVisibilityParams) error
}
