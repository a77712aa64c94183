package sqlstore

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

func TestCheckQueueOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dlq string
		max       int
		want      string // "" for valid
	}{
		{"q", "", 0, ""},
		{"q", "q-dlq", 3, ""},
		{"", "", 0, "empty name"},
		{"q", "q-dlq", 0, "give both or neither"},
		{"q", "", 2, "give both or neither"},
		{"q", "", -1, "give both or neither"},
		{"q", "q", 1, "its own dead-letter queue"},
	} {
		err := CheckQueueOpen(tc.name, tc.dlq, tc.max)
		if tc.want == "" {
			require.NoError(t, err, "%+v", tc)
		} else {
			require.ErrorContains(t, err, tc.want, "%+v", tc)
		}
	}
}

func TestReceiptHandles(t *testing.T) {
	t.Parallel()
	p := ReceiptPrefix()
	require.True(t, len(p) > 1 && p[len(p)-1] == '-')
	require.NotEqual(t, p, ReceiptPrefix(), "a prefix is fresh at every receive")
	id, ok := ReceiptID(p + "17")
	require.True(t, ok)
	require.EqualValues(t, 17, id)
	for _, h := range []string{"", "17", "-17", "abc-", "abc-x", "abc-0", "abc-99999999999999999999"} {
		_, ok := ReceiptID(h)
		require.False(t, ok, "%q is not a receipt handle", h)
	}
	require.Equal(t, []int64{1, 3}, ReceiptIDs([]string{"a-1", "bad", "b-3"}))
}

func TestDeleteOutcome(t *testing.T) {
	t.Parallel()
	handles := []string{"a-1", "b-2", "bad"}
	require.NoError(t, DeleteOutcome(handles[:2], map[string]bool{"a-1": true, "b-2": true}, false))

	err := DeleteOutcome(handles, map[string]bool{"a-1": true}, false)
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, []string{"b-2", "bad"}, failedIDs(be))
	for _, f := range be.Failed {
		require.ErrorIs(t, f.Err, queue.ErrInvalidReceipt)
	}

	// Sent again after an unknown outcome: a well-formed handle not found
	// may have been deleted by the first send; a malformed one never was.
	err = DeleteOutcome(handles, map[string]bool{"a-1": true}, true)
	require.ErrorAs(t, err, &be)
	require.Equal(t, []string{"bad"}, failedIDs(be))
}

func failedIDs(be *queue.BatchError) []string {
	var out []string
	for _, f := range be.Failed {
		out = append(out, f.ID)
	}
	return out
}

func TestVisibilityChange(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	nowFunc := func() time.Time { return clock }
	id, until, err := VisibilityChange(queue.ChangeVisibilityParams{ReceiptHandle: "x-5", Timeout: time.Minute}, nowFunc)
	require.NoError(t, err)
	require.EqualValues(t, 5, id)
	require.Equal(t, clock.Add(time.Minute), until, "a zero Now is the queue's clock")

	now := clock.Add(time.Hour)
	_, until, err = VisibilityChange(queue.ChangeVisibilityParams{ReceiptHandle: "x-5", Timeout: 0, Now: now}, nowFunc)
	require.NoError(t, err)
	require.Equal(t, now, until)

	_, _, err = VisibilityChange(queue.ChangeVisibilityParams{ReceiptHandle: "nope", Timeout: time.Minute}, nowFunc)
	require.ErrorIs(t, err, queue.ErrInvalidReceipt)
	_, _, err = VisibilityChange(queue.ChangeVisibilityParams{ReceiptHandle: "x-5", Timeout: -time.Second}, nowFunc)
	require.ErrorContains(t, err, "negative timeout")
}

// looks records the times a LongPoll looked at and answers with the
// deliveries of each look in turn (none once they run out).
type looks struct {
	at      []time.Time
	answers [][]queue.Delivery
}

func (l *looks) look(_ context.Context, max int, visibility time.Duration, now time.Time) ([]queue.Delivery, error) {
	l.at = append(l.at, now)
	if len(l.at) <= len(l.answers) {
		return l.answers[len(l.at)-1], nil
	}
	return nil, nil
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestLongPollChecksParams(t *testing.T) {
	t.Parallel()
	lp := LongPoll{Queue: "q", MaxBatch: 10, NowFunc: time.Now, Interval: time.Second}
	var l looks
	for _, p := range []queue.ReceiveParams{{Max: 0}, {Max: 11}, {Max: 1, Visibility: -1}, {Max: 1, Wait: -1}} {
		_, err := lp.Receive(t.Context(), p, l.look)
		require.ErrorContains(t, err, "receive from q", "%+v", p)
	}
	require.Empty(t, l.at, "a refused receive looks at nothing")
}

// A long poll with nothing visible looks every Interval until Wait has
// passed, each later look at p.Now plus the time waited.
func TestLongPollLooksUntilWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lp := LongPoll{Queue: "q", MaxBatch: 10, NowFunc: func() time.Time { panic("p.Now is set") }, Interval: time.Second}
		var l looks
		ds, err := lp.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 3 * time.Second, Now: t0}, l.look)
		require.NoError(t, err)
		require.Nil(t, ds)
		require.Equal(t, []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second), t0.Add(3 * time.Second)}, l.at)
	})
}

// A zero p.Now means the queue's clock at every look; the first look with
// messages ends the poll.
func TestLongPollClockAndFirstMessages(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clock := t0
		lp := LongPoll{Queue: "q", MaxBatch: 10, Interval: time.Second, NowFunc: func() time.Time {
			clock = clock.Add(time.Hour)
			return clock
		}}
		want := []queue.Delivery{{MessageID: "1"}}
		l := looks{answers: [][]queue.Delivery{nil, want}}
		ds, err := lp.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: time.Minute}, l.look)
		require.NoError(t, err)
		require.Equal(t, want, ds)
		require.Equal(t, []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)}, l.at)
	})
}

// A notification wakes the poll at once, long before its Interval; the
// subscription ends with the receive. Without Wait nothing subscribes.
func TestLongPollWakes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		woken := make(chan struct{}, 1)
		subscribed, unsubscribed := 0, 0
		lp := LongPoll{Queue: "q", MaxBatch: 10, NowFunc: time.Now, Interval: time.Hour,
			SubscribeFunc: func() (<-chan struct{}, func()) {
				subscribed++
				return woken, func() { unsubscribed++ }
			}}
		l := looks{answers: [][]queue.Delivery{nil, {{MessageID: "1"}}}}
		go func() {
			time.Sleep(5 * time.Minute)
			woken <- struct{}{}
		}()
		ds, err := lp.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: 2 * time.Hour, Now: t0}, l.look)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, []time.Time{t0, t0.Add(5 * time.Minute)}, l.at)
		require.Equal(t, 1, subscribed)
		require.Equal(t, 1, unsubscribed)

		_, err = lp.Receive(t.Context(), queue.ReceiveParams{Max: 1, Now: t0}, l.look)
		require.NoError(t, err)
		require.Equal(t, 1, subscribed, "a receive without Wait does not subscribe")
	})
}

// ctx's end ends a poll with ctx's error; a look's error ends it too.
func TestLongPollEnds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lp := LongPoll{Queue: "q", MaxBatch: 10, NowFunc: time.Now, Interval: time.Second}
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		var l looks
		_, err := lp.Receive(ctx, queue.ReceiveParams{Max: 1, Wait: time.Hour, Now: t0}, l.look)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "receive from q")

		boom := errors.New("boom")
		_, err = lp.Receive(t.Context(), queue.ReceiveParams{Max: 1, Wait: time.Hour, Now: t0},
			func(context.Context, int, time.Duration, time.Time) ([]queue.Delivery, error) { return nil, boom })
		require.ErrorIs(t, err, boom)
	})
}
