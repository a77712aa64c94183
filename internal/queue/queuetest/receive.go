package queuetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// TestVisibilityAndDelete: a received message is hidden for Visibility and
// comes back after it with ReceiveCount+1 and a new receipt handle; a
// deleted one never comes back.
func TestVisibilityAndDelete(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	honours := h.Capabilities.HonoursNow
	vis := 30 * time.Second
	if !honours {
		vis = time.Second // real time: the one case that waits
	}
	now := start()
	msgs := []queue.Message{msg("k", "kept", map[string]string{"baton-key": "k"}), msg("d", "deleted", nil)}
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	first := receiveN(t, q.Receiver, 2, queue.ReceiveParams{Visibility: vis, Now: now})
	requireSame(t, msgs, first)

	hiddenAt := now
	if honours {
		hiddenAt = now.Add(vis - time.Millisecond)
	}
	expectEmpty(t, q.Receiver, hiddenAt, "received messages are hidden for the visibility timeout")

	var kept queue.Delivery
	for _, d := range first {
		if string(d.Body) == "kept" {
			kept = d
		} else {
			require.NoError(t, q.Receiver.Delete(t.Context(), d.ReceiptHandle), "delete")
		}
	}

	// On a real clock the long polls of receiveN wait the timeout out.
	later := now.Add(vis)
	again := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: later})
	requireSame(t, msgs[:1], again)
	require.Equal(t, kept.MessageID, again[0].MessageID, "message id is stable across receives")
	require.Equal(t, 2, again[0].ReceiveCount, "receive count")
	require.NotEqual(t, kept.ReceiptHandle, again[0].ReceiptHandle, "each receive has a new receipt handle")
	expectEmpty(t, q.Receiver, later, "a deleted message never comes back")
}

// TestVisibilityBoundary: a message is hidden until exactly Now+Visibility.
func TestVisibilityBoundary(t *testing.T, h Harness) {
	t.Parallel()
	requireHonoursNow(t, h)
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	const vis = 30 * time.Second
	require.NoError(t, q.Sender.SendBatch(t.Context(), []queue.Message{msg("a", "boundary", nil)}))
	receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: vis, Now: now})
	expectEmpty(t, q.Receiver, now.Add(vis-time.Nanosecond), "hidden until Now+Visibility")
	ds, err := q.Receiver.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: vis, Now: now.Add(vis)})
	require.NoError(t, err)
	require.Len(t, ds, 1, "visible at Now+Visibility")
	require.Equal(t, 2, ds[0].ReceiveCount)
}

// TestChangeVisibilityZero: ChangeVisibility with Timeout 0 makes the
// message visible at once.
func TestChangeVisibilityZero(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	msgs := []queue.Message{msg("a", "released", map[string]string{"x": "y"})}
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	first := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	expectEmpty(t, q.Receiver, now, "hidden after receive")
	release(t, q.Receiver, first[0], now)
	again := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, msgs, again)
	require.Equal(t, first[0].MessageID, again[0].MessageID)
	require.Equal(t, 2, again[0].ReceiveCount)
	require.NotEqual(t, first[0].ReceiptHandle, again[0].ReceiptHandle)
}

// TestChangeVisibilityExtends: ChangeVisibility sets the message's
// visibility to Timeout after Now, both longer and shorter than the
// receive's.
func TestChangeVisibilityExtends(t *testing.T, h Harness) {
	t.Parallel()
	requireHonoursNow(t, h)
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	require.NoError(t, q.Sender.SendBatch(t.Context(), []queue.Message{msg("a", "extended", nil)}))
	first := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: 30 * time.Second, Now: now})

	at := now.Add(10 * time.Second)
	err := q.Receiver.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{
		ReceiptHandle: first[0].ReceiptHandle, Timeout: 5 * time.Minute, Now: at,
	})
	require.NoError(t, err)
	expectEmpty(t, q.Receiver, now.Add(30*time.Second), "extended past the receive's visibility")
	expectEmpty(t, q.Receiver, at.Add(5*time.Minute-time.Nanosecond), "hidden until the new timeout")
	ds, err := q.Receiver.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Hour, Now: at.Add(5 * time.Minute)})
	require.NoError(t, err)
	require.Len(t, ds, 1, "visible at the new timeout")

	// Shorten the hour to a second.
	err = q.Receiver.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{
		ReceiptHandle: ds[0].ReceiptHandle, Timeout: time.Second, Now: at,
	})
	require.NoError(t, err)
	ds, err = q.Receiver.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Hour, Now: at.Add(time.Second)})
	require.NoError(t, err)
	require.Len(t, ds, 1, "visible after the shortened timeout")
	require.Equal(t, 3, ds[0].ReceiveCount)
}

// TestStaleReceipt: only the latest receipt handle of a message still in
// the queue works, and only on its own queue.
func TestStaleReceipt(t *testing.T, h Harness) {
	t.Parallel()
	if !h.Capabilities.ExactReceiptCheck {
		t.Skip("the adapter does not reliably report stale receipt handles (SQS accepts some)")
	}
	q := h.NewQueue(t, QueueOptions{})
	other := h.NewQueue(t, QueueOptions{})
	now := start()
	ctx := t.Context()
	require.NoError(t, q.Sender.SendBatch(ctx, []queue.Message{msg("a", "stale", nil)}))
	first := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})[0]
	release(t, q.Receiver, first, now)
	latest := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: now})[0]

	invalid := func(what string, err error) {
		t.Helper()
		require.ErrorIs(t, err, queue.ErrInvalidReceipt, what)
	}
	cv := func(r queue.Receiver, handle string) error {
		return r.ChangeVisibility(ctx, queue.ChangeVisibilityParams{ReceiptHandle: handle, Now: now})
	}
	invalid("delete with the previous receive's handle", q.Receiver.Delete(ctx, first.ReceiptHandle))
	invalid("change visibility with the previous receive's handle", cv(q.Receiver, first.ReceiptHandle))
	invalid("delete on another queue", other.Receiver.Delete(ctx, latest.ReceiptHandle))
	invalid("change visibility on another queue", cv(other.Receiver, latest.ReceiptHandle))
	invalid("delete with an empty handle", q.Receiver.Delete(ctx, ""))
	invalid("delete with a made-up handle", q.Receiver.Delete(ctx, "no-such-receipt"))
	expectEmpty(t, q.Receiver, now, "failed calls leave the message hidden")

	require.NoError(t, q.Receiver.Delete(ctx, latest.ReceiptHandle), "delete with the latest handle")
	invalid("delete twice", q.Receiver.Delete(ctx, latest.ReceiptHandle))
	invalid("change visibility after delete", cv(q.Receiver, latest.ReceiptHandle))
}

// TestReceiveMax: Receive returns at most Max messages and hides only
// those.
func TestReceiveMax(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	msgs := batch("max", 5)
	require.NoError(t, q.Sender.SendBatch(t.Context(), msgs))
	var got []queue.Delivery
	for _, max := range []int{2, 1} {
		ds, err := q.Receiver.Receive(t.Context(), queue.ReceiveParams{Max: max, Visibility: longVisibility, Wait: pollWait, Now: now})
		require.NoError(t, err)
		require.LessOrEqual(t, len(ds), max, "Max %d", max)
		require.NotEmpty(t, ds, "Max %d with messages waiting", max)
		got = append(got, ds...)
	}
	got = append(got, receiveN(t, q.Receiver, len(msgs)-len(got), queue.ReceiveParams{Visibility: longVisibility, Now: now})...)
	requireSame(t, msgs, got)
	expectEmpty(t, q.Receiver, now, "all received")
}

// TestConcurrentReceivers: receivers polling at once never get the same
// message while it is hidden.
func TestConcurrentReceivers(t *testing.T, h Harness) {
	t.Parallel()
	const receivers, total = 4, 30
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	msgs := batch("concurrent", total)
	for i := 0; i < total; i += queue.MaxBatch {
		require.NoError(t, q.Sender.SendBatch(t.Context(), msgs[i:min(total, i+queue.MaxBatch)]))
	}

	ctx, cancel := withTimeout(t)
	defer cancel()
	var (
		mu   sync.Mutex
		got  []queue.Delivery
		errs []error
		wg   sync.WaitGroup
	)
	for r := range receivers {
		wg.Go(func() {
			for ctx.Err() == nil {
				ds, err := q.Receiver.Receive(ctx, queue.ReceiveParams{Max: 3, Visibility: longVisibility, Wait: pollWait, Now: now})
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil { // after cancel, errors are expected
						errs = append(errs, fmt.Errorf("receiver %d: %w", r, err))
					}
					mu.Unlock()
					return
				}
				got = append(got, ds...)
				if len(got) >= total {
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	requireSame(t, msgs, got)
}
