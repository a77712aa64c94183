package queuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// TestNonexistentQueue: on a queue that does not exist, SendBatch and
// Receive fail as a whole with an error matching queue.ErrNotFound: a send
// lists no entries in a *queue.BatchError, a receive does not pass for an
// empty queue, and a long poll fails at once instead of waiting. SendAll
// sends nothing and says so. None of it creates the queue.
func TestNonexistentQueue(t *testing.T, h Harness) {
	t.Parallel()
	if h.NewNonexistentQueue == nil {
		t.Skip("Harness.NewNonexistentQueue is nil: the harness cannot name a queue that does not exist")
	}
	q := h.NewNonexistentQueue(t)
	ctx := t.Context()
	now := start()
	notFound := func(what string, err error) {
		t.Helper()
		require.ErrorIs(t, err, queue.ErrNotFound, what)
		require.NotErrorIs(t, err, queue.ErrBatchTooLarge, what)
		require.NotErrorIs(t, err, queue.ErrInvalidReceipt, what)
		var be *queue.BatchError
		require.False(t, errors.As(err, &be), "%s: the call fails as a whole, not entry by entry: %v", what, err)
	}

	notFound("send", q.Sender.SendBatch(ctx, batch("to nowhere", 3)))
	ds, err := q.Receiver.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: longVisibility, Now: now})
	notFound("receive", err)
	require.Empty(t, ds)

	const wait = 10 * time.Second
	began := time.Now()
	_, err = q.Receiver.Receive(ctx, queue.ReceiveParams{Max: 1, Visibility: longVisibility, Wait: wait, Now: now})
	notFound("receive with a long poll", err)
	require.Less(t, time.Since(began), wait, "a long poll on a missing queue fails at once")

	sent, err := queue.SendAll(ctx, q.Sender, batch("all to nowhere", 12), nil)
	notFound("send all", err)
	require.Zero(t, sent)

	_, err = q.Receiver.Receive(ctx, queue.ReceiveParams{Max: 1, Visibility: longVisibility, Now: now})
	notFound("receive after the sends", err)
}
