package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/clocktest"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/queue/queuetest"
)

// openQueueTestDB opens a fresh database in a temporary directory.
func openQueueTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// openTestQueue opens a queue, failing t on error.
func openTestQueue(t *testing.T, db *DB, name string, o *QueueOptions) *Queue {
	t.Helper()
	q, err := OpenQueue(t.Context(), db, name, o)
	require.NoError(t, err)
	return q
}

// namedQueues makes the suite's queues in one database file. A send
// stores every entry or none, so no message is unsendable.
func namedQueues(db *DB) *queuetest.Named {
	return &queuetest.Named{
		OpenFunc: func(t *testing.T, name, deadLetter string, maxReceives int) queuetest.NamedQueue {
			var o *QueueOptions
			if deadLetter != "" {
				o = &QueueOptions{DeadLetterQueue: deadLetter, MaxReceives: maxReceives}
			}
			return openTestQueue(t, db, name, o)
		},
		DropFunc: func(t *testing.T, name string) {
			_, err := db.SQL().ExecContext(t.Context(), `DELETE FROM queues WHERE name = ?`, name)
			require.NoError(t, err)
		},
	}
}

// queueHarness is the suite's harness on h's queues.
func queueHarness(h *queuetest.Named) queuetest.Harness {
	return queuetest.Harness{
		NewQueue:            h.NewQueue,
		NewNonexistentQueue: h.NewNonexistentQueue,
		Capabilities:        queuetest.Capabilities{ExactReceiptCheck: true, HonoursNow: true, ExactDepth: true},
	}
}

func TestQueueConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, queueHarness(namedQueues(openQueueTestDB(t))))
}

// testMessages makes n messages with bodies m0, m1, ….
func testMessages(n int) []queue.Message {
	out := make([]queue.Message, n)
	for i := range out {
		out[i] = queue.Message{ID: fmt.Sprint(i), Body: fmt.Appendf(nil, "m%d", i)}
	}
	return out
}

func receive(t *testing.T, q *Queue, max int, vis time.Duration, now time.Time) []queue.Delivery {
	t.Helper()
	ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: max, Visibility: vis, Now: now})
	require.NoError(t, err)
	return ds
}

func TestQueueOpenRejectsBadOptions(t *testing.T) {
	t.Parallel()
	db := openQueueTestDB(t)
	cases := []struct {
		name string
		q    string
		o    *QueueOptions
	}{
		{"empty name", "", nil},
		{"dead-letter queue without max receives", "a", &QueueOptions{DeadLetterQueue: "dlq"}},
		{"max receives without dead-letter queue", "a", &QueueOptions{MaxReceives: 3}},
		{"negative max receives", "a", &QueueOptions{DeadLetterQueue: "dlq", MaxReceives: -1}},
		{"own dead-letter queue", "a", &QueueOptions{DeadLetterQueue: "a", MaxReceives: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := OpenQueue(t.Context(), db, c.q, c.o)
			require.Error(t, err)
		})
	}
}

func TestQueueRejectsBadReceiveParams(t *testing.T) {
	t.Parallel()
	q := openTestQueue(t, openQueueTestDB(t), "q", nil)
	for _, p := range []queue.ReceiveParams{
		{Max: 0},
		{Max: queue.MaxBatch + 1},
		{Max: 1, Visibility: -time.Second},
		{Max: 1, Wait: -time.Second},
	} {
		_, err := q.Receive(t.Context(), p)
		require.Error(t, err, "%+v", p)
	}
	err := q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: "x", Timeout: -time.Second})
	require.Error(t, err)
}

// The dead-letter policy lives in the database: a process that opens the
// queue without options applies it, and options replace it.
func TestQueuePolicyIsShared(t *testing.T) {
	t.Parallel()
	db := openQueueTestDB(t)
	other, err := Open(t.Context(), db.Path(), nil) // another process's handle
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })

	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	openTestQueue(t, db, "work", &QueueOptions{DeadLetterQueue: "work-dlq", MaxReceives: 1})
	q := openTestQueue(t, other, "work", &QueueOptions{NowFunc: func() time.Time { return now }})
	dlq, max, err := q.DeadLetterPolicy(t.Context())
	require.NoError(t, err)
	require.Equal(t, "work-dlq", dlq)
	require.Equal(t, 1, max)

	msgs := []queue.Message{{ID: "a", Body: []byte("poison"), Attributes: map[string]string{"k": "v"}}}
	require.NoError(t, q.SendBatch(t.Context(), msgs))
	first := receive(t, q, 1, time.Minute, now)
	require.Len(t, first, 1)
	require.NoError(t, q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: first[0].ReceiptHandle, Now: now}))
	require.Empty(t, receive(t, q, 1, time.Minute, now), "second receive dead-letters")
	require.ErrorIs(t, q.Delete(t.Context(), first[0].ReceiptHandle), queue.ErrInvalidReceipt, "the move voids the receipt")

	dead, err := openTestQueue(t, db, "work-dlq", nil).Inspect(t.Context(), 0)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, StoredMessage{
		MessageID:  first[0].MessageID,
		Body:       []byte("poison"),
		Attributes: map[string]string{"k": "v"},
		SentAt:     now,
		MovedFrom:  "work",
		MovedAt:    now,
	}, dead[0])

	// Options replace the stored policy; none keep it.
	openTestQueue(t, db, "work", &QueueOptions{DeadLetterQueue: "elsewhere", MaxReceives: 5})
	openTestQueue(t, other, "work", nil)
	dlq, max, err = q.DeadLetterPolicy(t.Context())
	require.NoError(t, err)
	require.Equal(t, "elsewhere", dlq)
	require.Equal(t, 5, max)
	dlq, max, err = openTestQueue(t, db, "plain", nil).DeadLetterPolicy(t.Context())
	require.NoError(t, err)
	require.Equal(t, "", dlq)
	require.Equal(t, 0, max)
}

// Receivers on separate database handles (as separate processes) never
// get the same message while it is hidden.
func TestQueueReceiversAcrossHandles(t *testing.T) {
	t.Parallel()
	const total, handles, perHandle = 60, 2, 2
	db := openQueueTestDB(t)
	msgs := testMessages(total)
	q := openTestQueue(t, db, "shared", nil)
	sent, err := queue.SendAll(t.Context(), q, msgs, nil)
	require.NoError(t, err)
	require.Equal(t, total, sent)

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		errs []error
		wg   sync.WaitGroup
	)
	for range handles {
		h, err := Open(t.Context(), db.Path(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		hq := openTestQueue(t, h, "shared", nil)
		for range perHandle {
			wg.Go(func() {
				for {
					ds, err := hq.Receive(t.Context(), queue.ReceiveParams{Max: 3, Visibility: time.Hour, Now: now})
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					}
					for _, d := range ds {
						seen[string(d.Body)]++
					}
					mu.Unlock()
					if err != nil || len(ds) == 0 {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	require.Empty(t, errs)
	require.Len(t, seen, total)
	for body, n := range seen {
		require.Equal(t, 1, n, "deliveries of %s", body)
	}
}

// Without Now in the params the queue's clock decides.
func TestQueueNowFunc(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC))
	q := openTestQueue(t, openQueueTestDB(t), "clocked", &QueueOptions{NowFunc: clock.Now})

	require.NoError(t, q.SendBatch(t.Context(), testMessages(1)))
	first := receive(t, q, 1, 30*time.Second, time.Time{})
	require.Len(t, first, 1)
	require.Equal(t, clock.Now(), first[0].SentAt)
	clock.Advance(30*time.Second - time.Nanosecond)
	require.Empty(t, receive(t, q, 1, 30*time.Second, time.Time{}))
	clock.Advance(time.Nanosecond)
	again := receive(t, q, 1, 30*time.Second, time.Time{})
	require.Len(t, again, 1)

	// ChangeVisibility counts from the clock too.
	require.NoError(t, q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: again[0].ReceiptHandle, Timeout: time.Minute}))
	clock.Advance(time.Minute - time.Nanosecond)
	require.Empty(t, receive(t, q, 1, 30*time.Second, time.Time{}))
	clock.Advance(time.Nanosecond)
	require.Len(t, receive(t, q, 1, 30*time.Second, time.Time{}), 1)
}

// Receive with Visibility 0 returns each message once per call, and leaves
// them visible.
func TestQueueReceiveZeroVisibility(t *testing.T) {
	t.Parallel()
	q := openTestQueue(t, openQueueTestDB(t), "zero", nil)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, q.SendBatch(t.Context(), testMessages(3)))
	for i := 1; i <= 2; i++ {
		ds := receive(t, q, queue.MaxBatch, 0, now)
		require.Len(t, ds, 3)
		for _, d := range ds {
			require.Equal(t, i, d.ReceiveCount)
		}
	}
}

// Receive returns Max messages when enough are visible, even when it
// dead-letters some on the way.
func TestQueueReceiveFillsMaxPastDeadLetters(t *testing.T) {
	t.Parallel()
	db := openQueueTestDB(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	q := openTestQueue(t, db, "fill", &QueueOptions{DeadLetterQueue: "fill-dlq", MaxReceives: 2, NowFunc: func() time.Time { return now }})
	require.NoError(t, q.SendBatch(t.Context(), testMessages(10)))
	// Visibility 0 leaves them visible: m0..m3 received twice, m4..m9 once,
	// all visible since now, so next in id order.
	require.Len(t, receive(t, q, 4, 0, now), 4)
	require.Len(t, receive(t, q, 10, 0, now), 10)

	got := receive(t, q, 5, time.Hour, now)
	var bodies []string
	for _, d := range got {
		bodies = append(bodies, string(d.Body))
	}
	require.Equal(t, []string{"m4", "m5", "m6", "m7", "m8"}, bodies)
	d, err := q.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, queue.Depth{Visible: 1, InFlight: 5}, d)
	d, err = openTestQueue(t, db, "fill-dlq", nil).Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, queue.Depth{Visible: 4}, d)
}

func TestQueueLongPoll(t *testing.T) {
	t.Parallel()
	db := openQueueTestDB(t)

	t.Run("waits out Wait on an empty queue", func(t *testing.T) {
		q := openTestQueue(t, db, "idle", nil)
		synctest.Test(t, func(t *testing.T) {
			began := time.Now()
			ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute, Wait: 20 * time.Second})
			require.NoError(t, err)
			require.Empty(t, ds)
			require.Equal(t, 20*time.Second, time.Since(began))
		})
	})

	t.Run("returns a message sent while waiting", func(t *testing.T) {
		q := openTestQueue(t, db, "late", &QueueOptions{PollInterval: time.Second})
		synctest.Test(t, func(t *testing.T) {
			began := time.Now()
			var got []queue.Delivery
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				got, err = q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute, Wait: 20 * time.Second})
			}()
			time.Sleep(5500 * time.Millisecond)
			require.NoError(t, q.SendBatch(t.Context(), testMessages(1)))
			<-done
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, 6*time.Second, time.Since(began), "found at the next poll")
		})
	})

	t.Run("advances an explicit Now while waiting", func(t *testing.T) {
		q := openTestQueue(t, db, "hidden", nil)
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		require.NoError(t, q.SendBatch(t.Context(), testMessages(1)))
		require.Len(t, receive(t, q, 1, 3*time.Second, now), 1)
		synctest.Test(t, func(t *testing.T) {
			began := time.Now()
			ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute, Wait: 20 * time.Second, Now: now})
			require.NoError(t, err)
			require.Len(t, ds, 1, "visible again 3s into the wait")
			require.Equal(t, 3*time.Second, time.Since(began))
		})
	})

	t.Run("stops when ctx ends", func(t *testing.T) {
		q := openTestQueue(t, db, "cancelled", nil)
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			began := time.Now()
			_, err := q.Receive(ctx, queue.ReceiveParams{Max: 1, Visibility: time.Minute, Wait: 20 * time.Second})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, 2*time.Second, time.Since(began))
		})
	})
}

func TestQueueDepthPeekMoveTo(t *testing.T) {
	t.Parallel()
	db := openQueueTestDB(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := openTestQueue(t, db, "dlq", &QueueOptions{NowFunc: clock})
	dst := openTestQueue(t, db, "work", &QueueOptions{NowFunc: clock})
	depth := func(q *Queue) [2]int {
		t.Helper()
		d, err := q.Depth(t.Context())
		require.NoError(t, err)
		require.False(t, d.Approximate)
		require.Zero(t, d.Delayed)
		return [2]int{d.Visible, d.InFlight}
	}
	peekBodies := func(q *Queue, limit int) []string {
		t.Helper()
		ms, err := q.Peek(t.Context(), limit)
		require.NoError(t, err)
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Body))
		}
		return out
	}

	require.NoError(t, src.SendBatch(t.Context(), testMessages(5)))
	inflight := receive(t, src, 2, time.Minute, now)
	require.Len(t, inflight, 2)
	require.Equal(t, [2]int{3, 2}, depth(src))
	require.Equal(t, []string{"m0", "m1", "m2", "m3", "m4"}, peekBodies(src, 0), "peek lists in-flight messages too")
	require.Equal(t, []string{"m0", "m1"}, peekBodies(src, 2))
	require.Equal(t, [2]int{3, 2}, depth(src), "peek receives nothing")

	n, err := src.MoveTo(t.Context(), dst, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, [2]int{1, 2}, depth(src))
	require.Equal(t, [2]int{2, 0}, depth(dst))
	n, err = src.MoveTo(t.Context(), dst, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n, "all visible ones; in-flight ones stay")
	require.Equal(t, [2]int{0, 2}, depth(src))
	require.Equal(t, []string{"m2", "m3", "m4"}, peekBodies(dst, 0))

	moved, err := dst.Inspect(t.Context(), 1)
	require.NoError(t, err)
	require.Equal(t, "dlq", moved[0].MovedFrom)
	require.Equal(t, now, moved[0].MovedAt)
	require.Zero(t, moved[0].ReceiveCount)
	got := receive(t, dst, queue.MaxBatch, time.Minute, now)
	require.Len(t, got, 3)
	require.Equal(t, moved[0].MessageID, got[0].MessageID, "the id survives the move")
	require.Equal(t, 1, got[0].ReceiveCount, "the count restarts")

	_, err = src.MoveTo(t.Context(), src, 0)
	require.Error(t, err)

	// A queue of another file gets the messages by receive, send and
	// delete: same bodies and attributes, new ids.
	plain := openTestQueue(t, db, "plain", nil)
	require.NoError(t, plain.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: []byte("a"), Attributes: map[string]string{"k": "v"}}, {ID: "b", Body: []byte("b")}}))
	elsewhere := openTestQueue(t, openQueueTestDB(t), "work", nil)
	n, err = plain.MoveTo(t.Context(), elsewhere, 0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	d, err := plain.Depth(t.Context())
	require.NoError(t, err)
	require.Zero(t, d.Total())
	there, err := elsewhere.Peek(t.Context(), 0)
	require.NoError(t, err)
	require.Len(t, there, 2)
	require.ElementsMatch(t, []string{"a", "b"}, []string{string(there[0].Body), string(there[1].Body)})
	for _, m := range there {
		if string(m.Body) == "a" {
			require.Equal(t, map[string]string{"k": "v"}, m.Attributes)
		}
	}
}

// ownClock hides the callers' Now from the queue, so that it runs on its
// own clock like SQS does.
type ownClock struct{ *Queue }

func (q ownClock) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	p.Now = time.Time{}
	return q.Queue.Receive(ctx, p)
}

func (q ownClock) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	p.Now = time.Time{}
	return q.Queue.ChangeVisibility(ctx, p)
}

// ownClockHarness is queueHarness with every receiver on its own clock.
func ownClockHarness(h *queuetest.Named) queuetest.Harness {
	hide := func(q queuetest.Queue) queuetest.Queue {
		q.Receiver = ownClock{q.Receiver.(*Queue)}
		if q.DeadLetters != nil {
			q.DeadLetters = ownClock{q.DeadLetters.(*Queue)}
		}
		return q
	}
	return queuetest.Harness{
		NewQueue: func(t *testing.T, o queuetest.QueueOptions) queuetest.Queue {
			return hide(h.NewQueue(t, o))
		},
		NewNonexistentQueue: func(t *testing.T) queuetest.Queue {
			return hide(h.NewNonexistentQueue(t))
		},
		Capabilities: queuetest.Capabilities{ExactReceiptCheck: false, HonoursNow: false, ExactDepth: true},
	}
}

// The suite's path for adapters with their own clock (one case waits a
// real second).
func TestQueueConformanceOwnClock(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, ownClockHarness(namedQueues(openQueueTestDB(t))))
}

// The conformance suite (NonexistentQueue) checks send and receive; here,
// the dead-letter policy.
func TestQueueNotFound(t *testing.T) {
	t.Parallel()
	db := openQueueTestDB(t)
	q := openTestQueue(t, db, "gone", nil)
	_, err := db.SQL().ExecContext(t.Context(), `DELETE FROM queues WHERE name = 'gone'`)
	require.NoError(t, err)
	_, _, err = q.DeadLetterPolicy(t.Context())
	require.ErrorIs(t, err, queue.ErrNotFound)
}
