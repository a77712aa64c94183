package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// TestDeadLetter: a message received MaxReceives times without being
// deleted is moved, intact, to the dead-letter queue on its next receive,
// and is no longer in the source queue.
func TestDeadLetter(t *testing.T, h Harness) {
	t.Parallel()
	const maxReceives = 2
	q := h.NewQueue(t, QueueOptions{MaxReceives: maxReceives})
	require.NotNil(t, q.DeadLetters, "harness returned no dead-letter receiver")
	now := start()
	msgs := []queue.Message{msg("p", "poison", map[string]string{"baton-key": "k", "baton-error": "boom"})}
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))

	var id string
	for i := 1; i <= maxReceives; i++ {
		d := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})[0]
		require.Equal(t, i, d.ReceiveCount, "receive count")
		if id == "" {
			id = d.MessageID
		}
		require.Equal(t, id, d.MessageID)
		release(t, q.Receiver, d, now)
	}

	// The next receive moves the message instead of returning it. A
	// backend that samples may need several receives to reach it.
	deadline := time.Now().Add(expectTimeout)
	var dead []queue.Delivery
	for len(dead) == 0 && time.Now().Before(deadline) {
		expectEmpty(t, q.Receiver, now, "a message past MaxReceives is not returned")
		ds, err := q.DeadLetters.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Visibility: longVisibility, Wait: pollWait, Now: now})
		require.NoError(t, err, "receive from the dead-letter queue")
		dead = append(dead, ds...)
	}
	requireSame(t, msgs, dead)
	deleteAll(t, q.DeadLetters, dead)
	expectEmpty(t, q.Receiver, now, "the message was moved, not copied")
	expectEmpty(t, q.DeadLetters, now, "dead-letter queue emptied")
}

// TestNoDeadLetterPolicy: without a policy a message is delivered however
// often it is received.
func TestNoDeadLetterPolicy(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	require.Nil(t, q.DeadLetters, "no dead-letter queue asked for")
	now := start()
	msgs := []queue.Message{msg("a", "again and again", nil)}
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	for i := 1; i <= 4; i++ {
		got := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
		requireSame(t, msgs, got)
		require.Equal(t, i, got[0].ReceiveCount)
		release(t, q.Receiver, got[0], now)
	}
}
