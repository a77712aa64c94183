package engine

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// opaque hides a queue's concrete type, so that OpsOf falls back to the
// portable implementation (receive, send, delete).
type opaque struct{ Queue }

func deadLetters(n int) []queue.Message {
	msgs := make([]queue.Message, n)
	for i := range msgs {
		key := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: time.Date(2026, 5, 1, 12, i, 0, 0, time.UTC), Generation: 1}, Asset: "EURUSD"}
		msgs[i] = message.New(key, int64(i+1), false).QueueMessage()
		msgs[i].Attributes[message.AttrError] = "boom"
	}
	return msgs
}

func TestQueueOps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wrap func(Queue) Queue
	}{
		{"sqlite", func(q Queue) Queue { return q }},
		{"portable", func(q Queue) Queue { return opaque{q} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
			require.NoError(t, err)
			t.Cleanup(func() { b.Close() })
			ctx := t.Context()
			dlq, work := OpsOf(tc.wrap(b.DeadLetter)), tc.wrap(b.Work)
			msgs := deadLetters(5)
			_, err = queue.SendAll(ctx, b.DeadLetter, msgs, nil)
			require.NoError(t, err)

			seen, err := dlq.Peek(ctx, 0)
			require.NoError(t, err)
			require.Len(t, seen, 5)
			again, err := dlq.Peek(ctx, 3)
			require.NoError(t, err)
			require.Len(t, again, 3, "peeking consumed nothing")

			d, err := dlq.Depth(ctx)
			if tc.name == "portable" {
				require.ErrorIs(t, err, errors.ErrUnsupported)
			} else {
				require.NoError(t, err)
				require.Equal(t, 5, d.Total())
			}

			n, err := dlq.MoveTo(ctx, work, 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = dlq.MoveTo(ctx, work, 0)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			left, err := OpsOf(b.DeadLetter).Peek(ctx, 0)
			require.NoError(t, err)
			require.Empty(t, left)

			moved, err := OpsOf(b.Work).Peek(ctx, 0)
			require.NoError(t, err)
			require.Len(t, moved, 5)
			bodies := map[string]bool{}
			for _, m := range moved {
				bodies[string(m.Body)] = true
				require.NotEmpty(t, m.Attributes[message.AttrKey], "attributes kept")
			}
			for _, m := range msgs {
				require.True(t, bodies[string(m.Body)], "body kept: %s", m.Body)
			}
		})
	}
}
