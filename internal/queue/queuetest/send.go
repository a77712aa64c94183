package queuetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

// TestSendBatchSizes: a batch of any size from 1 to MaxBatch is delivered
// whole, bodies and attributes intact, each message once.
func TestSendBatchSizes(t *testing.T, h Harness) {
	t.Parallel()
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

// TestBatchLimits: a batch that breaks the limits fails with
// ErrBatchTooLarge and sends nothing.
func TestBatchLimits(t *testing.T, h Harness) {
	t.Parallel()
	half := queue.MaxBatchBytes / 2
	cases := []struct {
		name string
		msgs []queue.Message
	}{
		{"nil", nil},
		{"empty", []queue.Message{}},
		{"too many entries", nil}, // the queue's limit + 1, below
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
			if c.name == "too many entries" {
				c.msgs = batch("too many", queue.BatchLimit(q.Sender)+1) // beyond its limit (queue.LargeBatches)
			}
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

// TestBatchAtByteLimit: a batch of exactly MaxBatchBytes is accepted.
func TestBatchAtByteLimit(t *testing.T, h Harness) {
	t.Parallel()
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

// TestSendAll: SendAll delivers more than one batch's worth, each message
// once.
func TestSendAll(t *testing.T, h Harness) {
	t.Parallel()
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

// TestSendAllSplitsBySize: SendAll cuts batches at MaxBatchBytes as well as
// at MaxBatch entries.
func TestSendAllSplitsBySize(t *testing.T, h Harness) {
	t.Parallel()
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

// unsendable returns the harness's unsendable messages with entry ids u0,
// u1, …, skipping the case when it has none.
func unsendable(t *testing.T, h Harness) []queue.Message {
	t.Helper()
	if len(h.Unsendable) == 0 {
		t.Skip("Harness.Unsendable is empty: the adapter sends every message within the limits, so SendBatch is all or nothing")
	}
	require.LessOrEqual(t, len(h.Unsendable), queue.MaxBatch-3, "Harness.Unsendable: at most %d messages", queue.MaxBatch-3)
	out := make([]queue.Message, len(h.Unsendable))
	for i, m := range h.Unsendable {
		m.ID = fmt.Sprint("u", i)
		out[i] = m
	}
	return out
}

// requireRefused fails unless err is a *queue.BatchError listing exactly
// the entries of refused, each with an error.
func requireRefused(t *testing.T, err error, refused []queue.Message) {
	t.Helper()
	require.NotErrorIs(t, err, queue.ErrBatchTooLarge, "entries refused one by one, not a batch over the limits")
	var be *queue.BatchError
	require.ErrorAs(t, err, &be, "a batch with unsendable entries")
	var want, got []string
	for _, m := range refused {
		want = append(want, m.ID)
	}
	for _, f := range be.Failed {
		got = append(got, f.ID)
		require.Error(t, f.Err, "entry %s", f.ID)
	}
	require.ElementsMatch(t, want, got, "the entries refused")
}

// TestSendBatchPartial: the entries the adapter refuses are listed in a
// *queue.BatchError, each with its error, and are not sent; the other
// entries of the batch are, each once and intact. A batch of refused
// entries only sends nothing.
func TestSendBatchPartial(t *testing.T, h Harness) {
	t.Parallel()
	refused := unsendable(t, h)
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	good := batch("partial send", 3)
	var msgs []queue.Message
	for i, m := range good {
		msgs = append(msgs, m)
		if i == 0 {
			msgs = append(msgs, refused...)
		}
	}
	requireRefused(t, q.Sender.SendBatch(t.Context(), msgs), refused)
	got := receiveN(t, q.Receiver, len(good), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, good, got)
	expectEmpty(t, q.Receiver, now, "the refused entries were not sent")

	requireRefused(t, q.Sender.SendBatch(t.Context(), refused), refused)
	expectEmpty(t, q.Receiver, now, "a batch of refused entries sends nothing")
}

// TestSendAllPartial: queue.SendAll retries only the entries that failed:
// with an unsendable message among many it returns an error with the
// *queue.BatchError, counts as sent the messages before the batch that
// failed, and every other message arrives exactly once.
func TestSendAllPartial(t *testing.T, h Harness) {
	t.Parallel()
	refused := unsendable(t, h)[0]
	q := h.NewQueue(t, QueueOptions{})
	now := start()
	good := batch("send all partial", 25)
	const at = 15 // in the second batch of MaxBatch
	msgs := slices.Concat(good[:at], []queue.Message{refused}, good[at:])
	sent, err := queue.SendAll(t.Context(), q.Sender, msgs, nil)
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 1, "the unsendable message alone failed")
	require.Equal(t, at/queue.MaxBatch*queue.MaxBatch, sent, "sent: the messages before the batch that failed")

	got := receiveN(t, q.Receiver, len(good), queue.ReceiveParams{Visibility: longVisibility, Now: now})
	requireSame(t, good, got)
	expectEmpty(t, q.Receiver, now, "each message was sent once, the unsendable one never")
}

// TestSendDelay: a message sent with a Delay is not received before the
// delay has passed since its send, and is received after it, beside an
// undelayed one of the same batch received at once; a delay outside 0 to
// queue.MaxSendDelay is refused, nothing sent.
func TestSendDelay(t *testing.T, h Harness) {
	t.Parallel()
	q := h.NewQueue(t, QueueOptions{})
	const delay = 2 * time.Second
	delayed := msg("late", "delayed", nil)
	delayed.Delay = delay
	sent := time.Now()
	require.NoError(t, q.Sender.SendBatch(t.Context(), []queue.Message{delayed, msg("now", "at once", nil)}))
	first := receiveN(t, q.Receiver, 1, queue.ReceiveParams{Visibility: longVisibility, Now: time.Now()})
	require.Equal(t, "at once", string(first[0].Body))
	if time.Since(sent) < delay-200*time.Millisecond {
		expectEmpty(t, q.Receiver, time.Now(), "hidden for its delay")
	}
	deadline := time.Now().Add(delay + expectTimeout)
	var got []queue.Delivery
	for len(got) == 0 && time.Now().Before(deadline) {
		ds, err := q.Receiver.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: longVisibility, Now: time.Now(), Wait: pollWait})
		require.NoError(t, err)
		got = ds
	}
	require.Len(t, got, 1, "received after its delay")
	require.Equal(t, "delayed", string(got[0].Body))
	require.GreaterOrEqual(t, time.Since(sent), delay, "not before its delay")

	for _, d := range []time.Duration{-time.Second, queue.MaxSendDelay + time.Second} {
		bad := msg("bad", "bad", nil)
		bad.Delay = d
		require.ErrorIs(t, q.Sender.SendBatch(t.Context(), []queue.Message{bad}), queue.ErrBatchTooLarge, "delay %s", d)
	}
}
