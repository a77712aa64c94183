package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/queue/queuetest"
)

func openTestQueue(t *testing.T, db *DB, name string, o *QueueOptions) *Queue {
	t.Helper()
	q, err := OpenQueue(t.Context(), db, name, o)
	require.NoError(t, err)
	return q
}

// namedQueues makes the suite's queues in one database. A send stores
// every entry or none, so no message is unsendable.
func namedQueues(db *DB) *queuetest.Named {
	return &queuetest.Named{
		OpenFunc: func(t *testing.T, name, deadLetter string, maxReceives int) queuetest.NamedQueue {
			if deadLetter == "" {
				return openTestQueue(t, db, name, nil)
			}
			return openTestQueue(t, db, name, &QueueOptions{DeadLetterQueue: deadLetter, MaxReceives: maxReceives})
		},
		DropFunc: func(t *testing.T, name string) {
			_, err := db.pool.Exec(t.Context(), `DELETE FROM baton_queues WHERE name = $1`, name)
			require.NoError(t, err)
		},
	}
}

func TestQueueConformance(t *testing.T) {
	t.Parallel()
	h := namedQueues(openTestDB(t))
	queuetest.Run(t, queuetest.Harness{
		NewQueue:            h.NewQueue,
		NewNonexistentQueue: h.NewNonexistentQueue,
		Capabilities:        queuetest.Capabilities{ExactReceiptCheck: true, HonoursNow: true, ExactDepth: true},
	})
}

// A long poll wakes on the send's notification, well before its poll
// interval (an hour here) would look again.
func TestQueueLongPollWakesOnSend(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	q := openTestQueue(t, db, "wake", &QueueOptions{PollInterval: time.Hour})
	got := make(chan []queue.Delivery, 1)
	errs := make(chan error, 1)
	// The listener is started by the first long poll; make sure it
	// listens before the send, with a first poll that finds nothing.
	_, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute, Wait: time.Millisecond})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return listening(t, db) }, 10*time.Second, 10*time.Millisecond)
	go func() {
		ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute, Wait: time.Hour})
		got <- ds
		errs <- err
	}()
	require.NoError(t, q.SendBatch(t.Context(), []queue.Message{{ID: "1", Body: []byte("wake up")}}))
	select {
	case ds := <-got:
		require.NoError(t, <-errs)
		require.Len(t, ds, 1)
		require.Equal(t, "wake up", string(ds[0].Body))
	case <-time.After(30 * time.Second):
		t.Fatal("a long poll with an hour's poll interval was not woken by a send")
	}
}

// listening reports whether a session of the database LISTENs.
func listening(t *testing.T, db *DB) bool {
	var n int
	err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&n)
	require.NoError(t, err)
	return n > 0
}

// A queue opened without creating must exist.
func TestQueueNoCreate(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	_, err := OpenQueue(t.Context(), db, "absent", &QueueOptions{NoCreate: true})
	require.ErrorIs(t, err, queue.ErrNotFound)
	openTestQueue(t, db, "present", nil)
	_, err = OpenQueue(t.Context(), db, "present", &QueueOptions{NoCreate: true})
	require.NoError(t, err)
}

// Attributes PostgreSQL text cannot hold are refused with the reason.
func TestQueueRefusesNULAttribute(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	q := openTestQueue(t, db, "nul", nil)
	err := q.SendBatch(t.Context(), []queue.Message{{ID: "1", Body: []byte("x"), Attributes: map[string]string{"k": "a\x00b"}}})
	require.ErrorContains(t, err, "NUL")
}

// A send takes up to MaxBatch messages, a receive returns as many and a
// batch delete takes as many handles, each in one statement; beyond that
// each is refused.
func TestQueueLargeBatches(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	q := openTestQueue(t, db, "large", nil)
	require.Equal(t, MaxBatch, queue.BatchLimit(q))
	msgs := make([]queue.Message, MaxBatch+20)
	for i := range msgs {
		msgs[i] = queue.Message{ID: fmt.Sprint(i), Body: []byte(fmt.Sprint("m", i))}
	}
	require.ErrorIs(t, q.SendBatch(t.Context(), msgs[:MaxBatch+1]), queue.ErrBatchTooLarge)
	require.NoError(t, q.SendBatch(t.Context(), msgs[:MaxBatch]))
	require.NoError(t, q.SendBatch(t.Context(), msgs[MaxBatch:]))
	now := time.Now()
	_, err := q.Receive(t.Context(), queue.ReceiveParams{Max: MaxBatch + 1, Visibility: time.Minute, Now: now})
	require.ErrorContains(t, err, fmt.Sprintf("not in 1..%d", MaxBatch))
	ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: MaxBatch, Visibility: time.Minute, Now: now})
	require.NoError(t, err)
	require.Len(t, ds, MaxBatch)
	handles := make([]string, len(ds))
	for i, d := range ds {
		handles[i] = d.ReceiptHandle
	}
	require.ErrorIs(t, q.DeleteBatch(t.Context(), append(handles, "x-1")), queue.ErrBatchTooLarge)
	require.ErrorIs(t, q.DeleteBatch(t.Context(), append(handles[:MaxBatch-1:MaxBatch-1], handles[0])), queue.ErrBatchTooLarge, "a handle twice")
	require.NoError(t, q.DeleteBatch(t.Context(), handles))
	d, err := q.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, 20, d.Total())
}
