package queuetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// testSendBatchSizes: a batch of any size from 1 to MaxBatch is delivered
// whole, bodies and attributes intact, each message once.
func testSendBatchSizes(t *testing.T, h Harness) {
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	for n := 1; n <= queue.MaxBatch; n++ {
		msgs := batch(fmt.Sprint("batch of ", n), n)
		require.NoError(t, q.Sender.SendBatch(t.Context(), msgs), "send batch of %d", n)
		got := receiveN(t, q.Receiver, n, queue.ReceiveParams{Visibility: longVisibility, Now: now})
		requireSame(t, msgs, got)
		for _, d := range got {
			require.Equal(t, 1, d.ReceiveCount, "receive count of %q", d.Body)
		}
		deleteAll(t, q.Receiver, got)
	}
	expectEmpty(t, q.Receiver, now, "every message was received and deleted")
}

// testBatchLimits: a batch that breaks the limits fails with
// ErrBatchTooLarge and sends nothing.
func testBatchLimits(t *testing.T, h Harness) {
	half := queue.MaxBatchBytes / 2
	cases := []struct {
		name string
		msgs []queue.Message
	}{
		{"nil", nil},
		{"empty", []queue.Message{}},
		{"too many entries", batch("too many", queue.MaxBatch+1)},
		{"duplicate ids", []queue.Message{msg("a", "first", nil), msg("b", "second", nil), msg("a", "third", nil)}},
		{"one message over the byte limit", []queue.Message{msg("a", bigBody(queue.MaxBatchBytes+1), nil)}},
		{"total over the byte limit", []queue.Message{
			msg("a", bigBody(half), nil),
			msg("b", bigBody(half), nil),
			msg("c", "y", nil),
		}},
		{"attributes count toward the byte limit", []queue.Message{
			msg("a", bigBody(queue.MaxBatchBytes-3), map[string]string{"ab": "cd"}),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := h.NewQueue(t, QueueOptions{})
			now := start()
			err := q.Sender.SendBatch(t.Context(), c.msgs)
			require.ErrorIs(t, err, queue.ErrBatchTooLarge)

			// Nothing was sent: a marker sent afterwards is all there is.
			marker := []queue.Message{msg("m", "marker", nil)}
			require.NoError(t, q.Sender.SendBatch(t.Context(), marker))
			got := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
			requireSame(t, marker, got)
			expectEmpty(t, q.Receiver, now, "the rejected batch sent nothing")
		})
	}
}

// testBatchAtByteLimit: a batch of exactly MaxBatchBytes is accepted.
func testBatchAtByteLimit(t *testing.T, h Harness) {
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	a := map[string]string{"baton-key": "k"}
	quarter := queue.MaxBatchBytes / 4
	msgs := []queue.Message{
		msg("a", "a"+bigBody(quarter-1), nil),
		msg("b", "b"+bigBody(quarter-1), nil),
		msg("c", "c"+bigBody(quarter-1), nil),
		msg("d", "d"+bigBody(quarter-1-len("baton-key")-len("k")), a),
	}
	total := 0
	for _, m := range msgs {
		total += m.Size()
	}
	require.Equal(t, queue.MaxBatchBytes, total, "test batch size")
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, got)
}

// testSendAll: SendAll delivers more than one batch's worth, each message
// once.
func testSendAll(t *testing.T, h Harness) {
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	msgs := batch("send all", 25)
	sent, err := queue.SendAll(t.Context(), q.Sender, msgs, nil)
	require.NoError(t, err)
	require.Equal(t, len(msgs), sent)
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, got)
	expectEmpty(t, q.Receiver, now, "each message was sent once")
}

// testSendAllSplitsBySize: SendAll cuts batches at MaxBatchBytes as well as
// at MaxBatch entries.
func testSendAllSplitsBySize(t *testing.T, h Harness) {
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	msgs := make([]queue.Message, 5)
	for i := range msgs {
		// Three of these exceed MaxBatchBytes.
		msgs[i] = msg("", fmt.Sprint(i)+bigBody(100*1024), nil)
	}
	sent, err := queue.SendAll(t.Context(), q.Sender, msgs, nil)
	require.NoError(t, err)
	require.Equal(t, len(msgs), sent)
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, got)
}
