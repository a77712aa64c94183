package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// counter returns q's receiver as a queue.Counter, skipping the case when
// the adapter does not have the ability.
func counter(t *testing.T, q Queue) queue.Counter {
	t.Helper()
	c, ok := q.Receiver.(queue.Counter)
	if !ok {
		t.Skipf("the receiver (%T) cannot count its messages (queue.Counter is optional)", q.Receiver)
	}
	return c
}

// peeker returns q's receiver as a queue.Peeker, skipping the case when
// the adapter does not have the ability.
func peeker(t *testing.T, q Queue) queue.Peeker {
	t.Helper()
	p, ok := q.Receiver.(queue.Peeker)
	if !ok {
		t.Skipf("the receiver (%T) has no Peek of its own (queue.Peeker is optional; PeekByReceiving is the portable one)", q.Receiver)
	}
	return p
}

// mover returns q's dead-letter receiver as a queue.Mover, skipping the
// case when the adapter does not have the ability.
func mover(t *testing.T, q Queue) queue.Mover {
	t.Helper()
	require.NotNil(t, q.DeadLetters, "harness returned no dead-letter receiver")
	m, ok := q.DeadLetters.(queue.Mover)
	if !ok {
		t.Skipf("the dead-letter receiver (%T) has no MoveTo of its own (queue.Mover is optional; MoveByReceiving is the portable one)", q.DeadLetters)
	}
	return m
}

// awaitDepth returns c's counts once ok accepts them. Exact counts
// (Depth.Approximate unset) must be right at once; approximate ones lag,
// and are read again until they are right or expectTimeout has passed.
func awaitDepth(t *testing.T, c queue.Counter, what string, ok func(queue.Depth) bool) queue.Depth {
	t.Helper()
	deadline := time.Now().Add(expectTimeout)
	for {
		d, err := c.Depth(t.Context())
		require.NoError(t, err, "depth")
		if ok(d) {
			return d
		}
		if !d.Approximate {
			require.Failf(t, "wrong exact depth", "%s: got %+v", what, d)
		}
		if time.Now().After(deadline) {
			require.Failf(t, "wrong approximate depth", "%s: still %+v after %s", what, d, expectTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDepth: Depth counts visible and in-flight messages, and Total is
// their sum.
func TestDepth(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	c := counter(t, q)
	now := start()
	is := func(visible, inflight int) func(queue.Depth) bool {
		return func(d queue.Depth) bool {
			return d.Visible == visible && d.InFlight == inflight && d.Delayed == 0 && d.Total() == visible+inflight
		}
	}
	awaitDepth(t, c, "an empty queue", is(0, 0))

	msgs := batch("depth", 3)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	awaitDepth(t, c, "three sent", is(3, 0))

	got := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	awaitDepth(t, c, "one received", func(d queue.Depth) bool { return d.InFlight == 1 && d.Delayed == 0 })
	t.Run("VisibleLeavesOutInFlight", func(t *testing.T) {
		if !h.Capabilities.ExactDepth {
			t.Skip("Capabilities.ExactDepth unset: the adapter's Visible may include messages in flight")
		}
		awaitDepth(t, c, "one received", is(2, 1))
	})

	deleteAll(t, q.Receiver, got)
	awaitDepth(t, c, "one deleted", is(2, 0))
}

// requirePeeked fails unless got holds n distinct messages of want, each
// intact.
func requirePeeked(t *testing.T, want []queue.Message, got []queue.Peeked, n int) {
	t.Helper()
	require.Len(t, got, n, "messages peeked")
	byBody := make(map[string]queue.Message, len(want))
	for _, m := range want {
		byBody[string(m.Body)] = m
	}
	ids := map[string]bool{}
	for _, p := range got {
		m, ok := byBody[string(p.Body)]
		require.True(t, ok, "unexpected or repeated body %.60q", p.Body)
		delete(byBody, string(p.Body))
		require.Equal(t, attrs(m.Attributes), attrs(p.Attributes), "attributes of %.60q", p.Body)
		require.NotEmpty(t, p.MessageID, "message id")
		require.False(t, ids[p.MessageID], "message id %s peeked twice", p.MessageID)
		ids[p.MessageID] = true
		require.False(t, p.SentAt.IsZero(), "sent at")
	}
}

// peekConsumesNothing peeks at all, then at two, of three messages, and
// receives all three afterwards.
func peekConsumesNothing(t *testing.T, q Queue, peek func(max int) ([]queue.Peeked, error)) {
	t.Helper()
	msgs := batch("peek", 3)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))

	all, err := peek(0)
	require.NoError(t, err, "peek at all")
	requirePeeked(t, msgs, all, len(msgs))
	two, err := peek(2)
	require.NoError(t, err, "peek at two")
	requirePeeked(t, msgs, two, 2)

	// Taken after the peeks: a peek that receives makes the messages
	// visible again at its own clock.
	now := start()
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, got)
	expectEmpty(t, q.Receiver, now, "nothing but the three")
}

// TestPeek: the adapter's Peek returns up to max messages, intact, and
// consumes none: a later receive still gets each.
func TestPeek(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	p := peeker(t, q)
	peekConsumesNothing(t, q, func(max int) ([]queue.Peeked, error) { return p.Peek(t.Context(), max) })
}

// TestPeekByReceiving: the portable peek does the same on the adapter's
// Receiver.
func TestPeekByReceiving(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	peekConsumesNothing(t, q, func(max int) ([]queue.Peeked, error) {
		return queue.PeekByReceiving(t.Context(), q.Receiver, max)
	})
}

// moveBoundedThenAll moves two of five messages from src to dst, then the
// rest, and finds all five in dst, intact, and none in src.
func moveBoundedThenAll(t *testing.T, src, dst queue.Receiver, fill queue.Sender, move func(max int) (int, error)) {
	t.Helper()
	msgs := batch("move", 5)
	require.NoError(t, fill.SendBatch(t.Context(), msgs))

	n, err := move(2)
	require.NoError(t, err, "move two")
	require.Equal(t, 2, n, "moved by a move of at most two")
	now := start()
	first := receiveN(t, dst, 2, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	expectEmpty(t, dst, now, "a move of at most two moves two")

	n, err = move(0)
	require.NoError(t, err, "move all")
	require.Equal(t, len(msgs)-2, n, "moved by a move of all")
	now = start()
	rest := receiveN(t, dst, len(msgs)-2, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, append(first, rest...))
	expectEmpty(t, dst, now, "each moved once")
	expectEmpty(t, src, now, "moved, not copied")
}

// TestMoveTo: the adapter's MoveTo moves a dead-letter queue's messages
// back to its source queue, max at a time or all, keeping body and
// attributes.
func TestMoveTo(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{MaxReceives: 5})
	m := mover(t, q)
	require.NotNil(t, q.DeadLetterSender, "harness returned no dead-letter sender")
	moveBoundedThenAll(t, q.DeadLetters, q.Receiver, q.DeadLetterSender, func(max int) (int, error) {
		return m.MoveTo(t.Context(), q.Sender, max)
	})
}

// TestMoveByReceiving: the portable move does the same between two of the
// adapter's queues.
func TestMoveByReceiving(t *testing.T, h Harness) {
	t.Parallel()
	src, dst := h.NewQueue(t, QueueOptions{}), h.NewQueue(t, QueueOptions{})
	moveBoundedThenAll(t, src.Receiver, dst.Receiver, src.Sender, func(max int) (int, error) {
		return queue.MoveByReceiving(t.Context(), src.Receiver, dst.Sender, max)
	})
}

// TestPurgeByReceiving: the portable purge deletes a dead-letter queue's
// visible messages, max at a time or all, counts them, and leaves the
// messages in flight and the source queue alone.
func TestPurgeByReceiving(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{MaxReceives: 5})
	require.NotNil(t, q.DeadLetters, "harness returned no dead-letter receiver")
	require.NotNil(t, q.DeadLetterSender, "harness returned no dead-letter sender")
	source := batch("kept", 2)
	require.NoError(t, q.Sender.SendBatch(t.Context(), source))
	require.NoError(t, q.DeadLetterSender.SendBatch(t.Context(), batch("purged", 6)))
	now := start()
	inFlight := receiveN(t, q.DeadLetters, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})

	n, err := queue.PurgeByReceiving(t.Context(), q.DeadLetters, 2)
	require.NoError(t, err, "purge two")
	require.Equal(t, 2, n, "purged by a purge of at most two")
	n, err = queue.OpsOf(q.DeadLetters).Purge(t.Context(), 0)
	require.NoError(t, err, "purge all")
	require.Equal(t, 3, n, "purged by a purge of all: the visible rest")
	n, err = queue.PurgeByReceiving(t.Context(), q.DeadLetters, 0)
	require.NoError(t, err, "purge an empty queue")
	require.Zero(t, n, "purged from an empty queue")

	// The message in flight is still there, and only it.
	require.NoError(t, q.DeadLetters.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: inFlight[0].ReceiptHandle, Now: now}))
	now = start()
	again := receiveN(t, q.DeadLetters, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	require.Equal(t, inFlight[0].MessageID, again[0].MessageID)
	expectEmpty(t, q.DeadLetters, now, "purged")
	// The source queue is untouched.
	requireSame(t, source, receiveN(t, q.Receiver, len(source), queue.ReceiveParams{Visibility: longVisibility, Now: now}))
}
