package queuetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// batchDeleter returns q's receiver as a queue.BatchDeleter, skipping the
// case when the adapter does not have the ability.
func batchDeleter(t *testing.T, q Queue) queue.BatchDeleter {
	t.Helper()
	bd, ok := q.Receiver.(queue.BatchDeleter)
	if !ok {
		t.Skipf("the receiver (%T) has no DeleteBatch (queue.BatchDeleter is optional)", q.Receiver)
	}
	return bd
}

// sentAs returns the messages of msgs whose bodies ds carry.
func sentAs(msgs []queue.Message, ds []queue.Delivery) []queue.Message {
	var out []queue.Message
	for _, d := range ds {
		for _, m := range msgs {
			if string(m.Body) == string(d.Body) {
				out = append(out, m)
			}
		}
	}
	return out
}

func handles(ds []queue.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ReceiptHandle
	}
	return out
}

// testDeleteBatch: DeleteBatch removes exactly the messages of the handles
// it is given, up to MaxBatch at once.
func testDeleteBatch(t *testing.T, h Harness) {
	q := h.NewQueue(t, QueueOptions{})
	bd := batchDeleter(t, q)
	now := start()
	msgs := batch("delete batch", queue.MaxBatch)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, got)

	// Delete all but three; release those three and find exactly them again.
	kept, deleted := got[:3], got[3:]
	require.NoError(t, bd.DeleteBatch(t.Context(), handles(deleted)), "delete %d", len(deleted))
	for _, d := range kept {
		release(t, q.Receiver, d, now)
	}
	again := receiveN(t, q.Receiver, len(kept), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, sentAs(msgs, kept), again)
	expectEmpty(t, q.Receiver, now, "the deleted messages never come back")

	require.NoError(t, bd.DeleteBatch(t.Context(), handles(again)[:1]), "a batch of one")
	require.NoError(t, bd.DeleteBatch(t.Context(), handles(again)[1:]))
	for _, d := range again {
		err := q.Receiver.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: d.ReceiptHandle, Now: now})
		if h.Capabilities().ExactReceiptCheck {
			require.ErrorIs(t, err, queue.ErrInvalidReceipt, "change visibility of a deleted message")
		}
	}
	expectEmpty(t, q.Receiver, now, "every message deleted")
}

// testDeleteBatchLimits: a DeleteBatch that breaks the limits fails with
// ErrBatchTooLarge and deletes nothing.
func testDeleteBatchLimits(t *testing.T, h Harness) {
	q := h.NewQueue(t, QueueOptions{})
	bd := batchDeleter(t, q)
	now := start()
	msgs := batch("delete limits", 2)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	hs := handles(got)
	tooMany := append([]string(nil), hs...)
	for i := len(tooMany); i <= queue.MaxBatch; i++ {
		tooMany = append(tooMany, fmt.Sprint("made-up-", i))
	}
	for name, batch := range map[string][]string{
		"nil":          nil,
		"empty":        {},
		"too many":     tooMany,
		"handle twice": {hs[0], hs[1], hs[0]},
	} {
		require.ErrorIs(t, bd.DeleteBatch(t.Context(), batch), queue.ErrBatchTooLarge, name)
	}
	for _, d := range got {
		release(t, q.Receiver, d, now)
	}
	requireSame(t, msgs, receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now}))
}

// testDeleteBatchPartial: handles that are not valid fail alone, in a
// *queue.BatchError matching ErrInvalidReceipt; the valid ones of the same
// batch are deleted.
func testDeleteBatchPartial(t *testing.T, h Harness) {
	if !h.Capabilities().ExactReceiptCheck {
		t.Skip("the adapter does not reliably report stale receipt handles (SQS accepts some)")
	}
	q := h.NewQueue(t, QueueOptions{})
	bd := batchDeleter(t, q)
	now := start()
	msgs := batch("delete partial", 3)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	first := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	release(t, q.Receiver, first[0], now)
	latest := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})[0]
	require.Equal(t, first[0].MessageID, latest.MessageID)

	stale := first[0].ReceiptHandle
	err := bd.DeleteBatch(t.Context(), []string{first[1].ReceiptHandle, stale, "no-such-receipt", first[2].ReceiptHandle})
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	var failed []string
	for _, f := range be.Failed {
		failed = append(failed, f.ID)
		require.ErrorIs(t, f.Err, queue.ErrInvalidReceipt, "handle %q", f.ID)
	}
	require.ElementsMatch(t, []string{stale, "no-such-receipt"}, failed)

	err = bd.DeleteBatch(t.Context(), []string{first[1].ReceiptHandle})
	require.ErrorAs(t, err, &be, "deleted already")
	require.ErrorIs(t, be.Failed[0].Err, queue.ErrInvalidReceipt)

	release(t, q.Receiver, latest, now)
	again := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, sentAs(msgs, first[:1]), again)
	require.Equal(t, latest.MessageID, again[0].MessageID, "the message of the stale handle stays")
	expectEmpty(t, q.Receiver, now, "the two valid handles' messages were deleted")
}
