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

// TestDeleteBatch: DeleteBatch removes exactly the messages of the handles
// it is given, up to MaxBatch at once.
func TestDeleteBatch(t *testing.T, h Harness) {
	t.Parallel()
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
		if h.Capabilities.ExactReceiptCheck {
			require.ErrorIs(t, err, queue.ErrInvalidReceipt, "change visibility of a deleted message")
		}
	}
	expectEmpty(t, q.Receiver, now, "every message deleted")
}

// TestDeleteBatchLimits: a DeleteBatch that breaks the limits fails with
// ErrBatchTooLarge and deletes nothing.
func TestDeleteBatchLimits(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	bd := batchDeleter(t, q)
	now := start()
	msgs := batch("delete limits", 2)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	hs := handles(got)
	tooMany := append([]string(nil), hs...)
	for i := len(tooMany); i <= queue.BatchLimit(q.Receiver); i++ { // beyond the receiver's limit (queue.LargeBatches)
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

// madeUpHandle is a receipt handle no queue ever issued; every adapter
// knows it is not one of its own.
const madeUpHandle = "not-a-handle"

// requireFailedAlone fails unless err is a *queue.BatchError listing
// exactly the handles failed, each matching ErrInvalidReceipt.
func requireFailedAlone(t *testing.T, err error, failed ...string) {
	t.Helper()
	var be *queue.BatchError
	require.ErrorAs(t, err, &be, "a batch with invalid handles")
	var ids []string
	for _, f := range be.Failed {
		ids = append(ids, f.ID)
		require.ErrorIs(t, f.Err, queue.ErrInvalidReceipt, "handle %q", f.ID)
	}
	require.ElementsMatch(t, failed, ids, "the handles that failed")
}

// deleteSomeWithMadeUp deletes the first two of three messages with del,
// given their handles and a made-up one, requires the made-up handle to
// fail alone, and finds the third message alone in the queue afterwards.
func deleteSomeWithMadeUp(t *testing.T, q Queue, prefix string, del func(handles []string) error) {
	t.Helper()
	now := start()
	msgs := batch(prefix, 3)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	got := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})

	requireFailedAlone(t, del([]string{got[0].ReceiptHandle, madeUpHandle, got[1].ReceiptHandle}), madeUpHandle)

	release(t, q.Receiver, got[2], now)
	again := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, sentAs(msgs, got[2:]), again)
	require.Equal(t, got[2].MessageID, again[0].MessageID)
	expectEmpty(t, q.Receiver, now, "the messages of the two valid handles were deleted")
}

// TestDeleteBatchPartial: a handle no queue issued fails alone, in a
// *queue.BatchError matching ErrInvalidReceipt; the valid handles of the
// same batch are deleted.
func TestDeleteBatchPartial(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	bd := batchDeleter(t, q)
	deleteSomeWithMadeUp(t, q, "delete partial", func(handles []string) error {
		return bd.DeleteBatch(t.Context(), handles)
	})
}

// TestDeleteBatchStale: with ExactReceiptCheck, stale handles (of an
// earlier receive, of a message deleted already) fail alone too.
func TestDeleteBatchStale(t *testing.T, h Harness) {
	t.Parallel()
	if !h.Capabilities.ExactReceiptCheck {
		t.Skip("the adapter does not reliably report stale receipt handles (SQS accepts some)")
	}
	q := h.NewQueue(t, QueueOptions{})
	bd := batchDeleter(t, q)
	now := start()
	msgs := batch("delete stale", 3)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	first := receiveN(t, q.Receiver, len(msgs), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	release(t, q.Receiver, first[0], now)
	latest := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})[0]
	require.Equal(t, first[0].MessageID, latest.MessageID)

	stale := first[0].ReceiptHandle
	err := bd.DeleteBatch(t.Context(), []string{first[1].ReceiptHandle, stale, first[2].ReceiptHandle})
	requireFailedAlone(t, err, stale)
	requireFailedAlone(t, bd.DeleteBatch(t.Context(), []string{first[1].ReceiptHandle}), first[1].ReceiptHandle)

	release(t, q.Receiver, latest, now)
	again := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, sentAs(msgs, first[:1]), again)
	require.Equal(t, latest.MessageID, again[0].MessageID, "the message of the stale handle stays")
	expectEmpty(t, q.Receiver, now, "the two valid handles' messages were deleted")
}

// deleteOnly hides every ability of a Receiver but its own methods.
type deleteOnly struct{ queue.Receiver }

// TestDeleteAllPartial: the portable queue.DeleteAll reports a made-up
// handle alone, in a *queue.BatchError matching ErrInvalidReceipt, and
// deletes the others: with one Delete per handle, and with the adapter's
// DeleteBatch where it has one.
func TestDeleteAllPartial(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("OneByOne", func(t *testing.T) {
		t.Parallel()
		q := h.NewQueue(t, QueueOptions{})
		deleteSomeWithMadeUp(t, q, "delete all one by one", func(handles []string) error {
			return queue.DeleteAll(t.Context(), deleteOnly{q.Receiver}, handles)
		})
	})
	t.Run("AsTheReceiverDoes", func(t *testing.T) {
		t.Parallel()
		q := h.NewQueue(t, QueueOptions{})
		deleteSomeWithMadeUp(t, q, "delete all", func(handles []string) error {
			return queue.DeleteAll(t.Context(), q.Receiver, handles)
		})
	})
}
