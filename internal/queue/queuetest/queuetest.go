// Package queuetest is the conformance suite for queue.Sender and
// queue.Receiver, and for the optional abilities an adapter declares by
// implementing them (queue.BatchDeleter, queue.Counter, queue.Peeker,
// queue.Mover). Every adapter runs it from one test:
//
//	func TestQueue(t *testing.T) {
//		queuetest.Run(t, queuetest.Harness{
//			NewQueue:            newQueue,
//			NewNonexistentQueue: newMissingQueue,
//			Capabilities:        queuetest.Capabilities{ExactReceiptCheck: true, HonoursNow: true, ExactDepth: true},
//		})
//	}
//
// Each case is also exported (TestSendBatchSizes, TestDeadLetter, …), so
// that one can be run alone: queuetest.TestDeadLetter(t, h). Every case
// starts with t.Parallel() and asks the Harness for fresh, uniquely named
// queues.
//
// What an adapter cannot do is declared in its Capabilities, by leaving a
// Harness field empty, or by not implementing an optional ability (found,
// as callers find it, by type assertion on the Receiver); the cases that
// need it are skipped with the reason, never run with weaker assertions.
// The portable operator functions (queue.PeekByReceiving, queue.PurgeByReceiving,
// queue.MoveByReceiving) and the portable senders and deleters
// (queue.SendAll, queue.DeleteAll) run against every adapter.
//
// Adapters with their own clock (HonoursNow false) run one case against a
// real visibility timeout of one second; every other case avoids waiting by
// making messages visible again with ChangeVisibility.
package queuetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// Harness is what the suite needs of an adapter.
type Harness struct {
	// NewQueue creates a fresh queue with a name no other call uses, holding
	// no messages, and removes it when t ends (t.Cleanup). With
	// o.MaxReceives > 0 it also creates a dead-letter queue and a policy on
	// the queue that moves a message received MaxReceives times without
	// being deleted to it on its next receive (on SQS: a redrive policy with
	// maxReceiveCount = MaxReceives). It fails t when it cannot.
	NewQueue func(t *testing.T, o QueueOptions) Queue

	// NewNonexistentQueue returns a handle to a queue that does not exist
	// (never created, or deleted since): its Sender and Receiver. Nil skips
	// the case that needs it.
	NewNonexistentQueue func(t *testing.T) Queue

	// Unsendable are messages within the batch limits that the adapter
	// refuses one by one: SendBatch lists each in a *queue.BatchError and
	// sends the rest of the batch. Their bodies differ; their entry ids are
	// the suite's. Empty when the adapter accepts every message within the
	// limits (SendBatch is then all or nothing), which skips the cases that
	// need them.
	Unsendable []queue.Message

	// Capabilities says what the adapter can do.
	Capabilities Capabilities
}

// QueueOptions say what kind of queue NewQueue makes.
type QueueOptions struct {
	// MaxReceives is the dead-letter policy's maximum receive count; 0
	// means the queue has no dead-letter queue.
	MaxReceives int
}

// Queue is one queue made by a Harness.
type Queue struct {
	Sender   queue.Sender
	Receiver queue.Receiver
	// DeadLetters receives from the queue's dead-letter queue; nil when
	// QueueOptions.MaxReceives is 0. The optional abilities are found on it
	// as on Receiver (moving dead letters back is queue.Mover's main use).
	DeadLetters queue.Receiver
	// DeadLetterSender sends to the dead-letter queue directly, for the
	// cases that fill it; nil when QueueOptions.MaxReceives is 0.
	DeadLetterSender queue.Sender
}

// Capabilities are the abilities the suite cannot assume of every backend.
type Capabilities struct {
	// ExactReceiptCheck: Delete and ChangeVisibility return
	// queue.ErrInvalidReceipt for a handle that is not the latest of a
	// message still in the queue (a stale handle, a deleted message, a
	// handle of another queue, garbage). SQS does not reliably do so for
	// stale handles (it always does for garbage).
	ExactReceiptCheck bool

	// HonoursNow: the adapter uses ReceiveParams.Now and
	// ChangeVisibilityParams.Now as its clock, so visibility can be tested
	// with explicit times and no waiting. Without it the suite waits out one
	// real visibility timeout of one second.
	HonoursNow bool

	// ExactDepth: queue.Counter's Visible leaves out the messages in
	// flight, as it should; the SQS test server counts them as visible too.
	// Without it the step of the Depth case that checks Visible while a
	// message is in flight is skipped.
	ExactDepth bool
}

// Case is one conformance case.
type Case struct {
	Name string
	Func func(t *testing.T, h Harness)
}

// Cases lists every case, in the order Run runs them.
func Cases() []Case {
	return []Case{
		{"SendBatchSizes", TestSendBatchSizes},
		{"BatchLimits", TestBatchLimits},
		{"BatchAtByteLimit", TestBatchAtByteLimit},
		{"SendBatchPartial", TestSendBatchPartial},
		{"SendDelay", TestSendDelay},
		{"VisibilityAndDelete", TestVisibilityAndDelete},
		{"VisibilityBoundary", TestVisibilityBoundary},
		{"ChangeVisibilityZero", TestChangeVisibilityZero},
		{"ChangeVisibilityExtends", TestChangeVisibilityExtends},
		{"StaleReceipt", TestStaleReceipt},
		{"ReceiveMax", TestReceiveMax},
		{"ConcurrentReceivers", TestConcurrentReceivers},
		{"NonexistentQueue", TestNonexistentQueue},
		{"DeadLetter", TestDeadLetter},
		{"NoDeadLetterPolicy", TestNoDeadLetterPolicy},
		{"SendAll", TestSendAll},
		{"SendAllSplitsBySize", TestSendAllSplitsBySize},
		{"SendAllPartial", TestSendAllPartial},
		{"DeleteBatch", TestDeleteBatch},
		{"DeleteBatchLimits", TestDeleteBatchLimits},
		{"DeleteBatchPartial", TestDeleteBatchPartial},
		{"DeleteBatchStale", TestDeleteBatchStale},
		{"DeleteAllPartial", TestDeleteAllPartial},
		{"Depth", TestDepth},
		{"Peek", TestPeek},
		{"PeekByReceiving", TestPeekByReceiving},
		{"MoveTo", TestMoveTo},
		{"MoveByReceiving", TestMoveByReceiving},
		{"PurgeByReceiving", TestPurgeByReceiving},
	}
}

// Run runs every case against the queues h makes.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) { c.Func(t, h) })
	}
}

const (
	// longVisibility hides a message for longer than any case runs.
	longVisibility = time.Hour
	// pollWait is the long poll used where a message is expected.
	pollWait = time.Second
	// expectTimeout bounds the receives that wait for expected messages.
	expectTimeout = 15 * time.Second
)

// start is a base for the explicit clocks the cases pass. Adapters that
// honour Now compare it with the visibility times they stored; the others
// ignore it.
func start() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// msg makes a message whose body is unique within a case; bodies are text
// because SQS accepts only text.
func msg(id, body string, attrs map[string]string) queue.Message {
	return queue.Message{ID: id, Body: []byte(body), Attributes: attrs}
}

// batch makes n messages with distinct bodies prefixed by prefix; every
// other one has attributes.
func batch(prefix string, n int) []queue.Message {
	out := make([]queue.Message, n)
	for i := range out {
		var attrs map[string]string
		if i%2 == 1 {
			attrs = map[string]string{"baton-key": fmt.Sprintf("%s/%d", prefix, i), "index": fmt.Sprint(i)}
		}
		out[i] = msg(fmt.Sprint("e", i), fmt.Sprintf("%s message %d ✓", prefix, i), attrs)
	}
	return out
}

// receiveN receives until n messages arrived (failing after expectTimeout)
// and returns them. It never asks for more than n, so callers check for
// extra messages with expectEmpty.
func receiveN(t *testing.T, r queue.Receiver, n int, p queue.ReceiveParams) []queue.Delivery {
	t.Helper()
	if p.Wait == 0 {
		p.Wait = pollWait
	}
	deadline := time.Now().Add(expectTimeout)
	var got []queue.Delivery
	for len(got) < n && time.Now().Before(deadline) {
		p.Max = min(queue.MaxBatch, n-len(got))
		ds, err := r.Receive(t.Context(), p)
		require.NoError(t, err, "receive")
		require.LessOrEqual(t, len(ds), p.Max, "receive returned more than Max")
		got = append(got, ds...)
	}
	require.Len(t, got, n, "messages received within %s: %v", expectTimeout, bodies(got))
	return got
}

// expectEmpty fails when a receive returns a message. It does not wait: on
// a backend that samples (SQS short polls) it may miss a message, which
// only makes it weaker, never wrong.
func expectEmpty(t *testing.T, r queue.Receiver, now time.Time, what string) {
	t.Helper()
	ds, err := r.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Visibility: longVisibility, Now: now})
	require.NoError(t, err, "receive")
	require.Empty(t, bodies(ds), what)
}

// requireSame fails unless the deliveries carry exactly the messages, in
// any order, each once, intact.
func requireSame(t *testing.T, want []queue.Message, got []queue.Delivery) {
	t.Helper()
	require.Len(t, got, len(want))
	byBody := make(map[string]queue.Message, len(want))
	for _, m := range want {
		byBody[string(m.Body)] = m
	}
	ids := map[string]bool{}
	for _, d := range got {
		m, ok := byBody[string(d.Body)]
		require.True(t, ok, "unexpected or repeated body %.60q", d.Body)
		delete(byBody, string(d.Body))
		require.Equal(t, attrs(m.Attributes), attrs(d.Attributes), "attributes of %.60q", d.Body)
		require.NotEmpty(t, d.MessageID, "message id")
		require.False(t, ids[d.MessageID], "message id %s on two deliveries", d.MessageID)
		ids[d.MessageID] = true
		require.NotEmpty(t, d.ReceiptHandle, "receipt handle")
		require.False(t, d.SentAt.IsZero(), "sent at")
	}
}

// attrs normalises nil and empty attribute maps.
func attrs(m map[string]string) map[string]string {
	if len(m) == 0 {
		return map[string]string{}
	}
	return m
}

func bodies(ds []queue.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		b := string(d.Body)
		if len(b) > 60 {
			b = b[:60] + "…"
		}
		out[i] = b
	}
	slices.Sort(out)
	return out
}

func deleteAll(t *testing.T, r queue.Receiver, ds []queue.Delivery) {
	t.Helper()
	for _, d := range ds {
		require.NoError(t, r.Delete(t.Context(), d.ReceiptHandle), "delete %.60q", d.Body)
	}
}

// release makes a received message visible again at once.
func release(t *testing.T, r queue.Receiver, d queue.Delivery, now time.Time) {
	t.Helper()
	err := r.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: d.ReceiptHandle, Now: now})
	require.NoError(t, err, "change visibility of %.60q to 0", d.Body)
}

func requireHonoursNow(t *testing.T, h Harness) {
	t.Helper()
	if !h.Capabilities.HonoursNow {
		t.Skip("the adapter uses its own clock: this case steps ReceiveParams.Now across visibility boundaries and would otherwise wait minutes of real time")
	}
}

func bigBody(n int) string { return strings.Repeat("x", n) }

// withTimeout bounds a case's goroutines.
func withTimeout(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), 2*expectTimeout)
}
