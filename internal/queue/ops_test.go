package queue_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
)

// fullQueue is what the cases move between.
type fullQueue interface {
	queue.Sender
	queue.Receiver
}

// opaque hides a queue's concrete type and optional abilities, so that
// OpsOf falls back to the portable ones (receive, send, delete).
type opaque struct{ fullQueue }

func deadLetters(n int) []queue.Message {
	msgs := make([]queue.Message, n)
	for i := range msgs {
		msgs[i] = queue.Message{
			Body:       fmt.Appendf(nil, `{"item":%d}`, i),
			Attributes: map[string]string{"baton-key": fmt.Sprintf("fx/%d", i), "baton-error": "boom"},
		}
	}
	return msgs
}

// OpsOf uses the queue's own abilities where it has them (the embedded
// queue has all three) and the portable ones otherwise; both peek without
// consuming and move bodies and attributes.
func TestOpsOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		wrapFunc func(fullQueue) fullQueue
	}{
		{"own", func(q fullQueue) fullQueue { return q }},
		{"portable", func(q fullQueue) fullQueue { return opaque{q} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "baton.db"), nil)
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			dead, err := sqlite.OpenQueue(ctx, db, "work-dlq", nil)
			require.NoError(t, err)
			work, err := sqlite.OpenQueue(ctx, db, "work", &sqlite.QueueOptions{DeadLetterQueue: "work-dlq", MaxReceives: 3})
			require.NoError(t, err)

			dlq, dst := queue.OpsOf(tc.wrapFunc(dead)), tc.wrapFunc(work)
			msgs := deadLetters(5)
			_, err = queue.SendAll(ctx, dead, msgs, nil)
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

			n, err := dlq.MoveTo(ctx, dst, 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = dlq.MoveTo(ctx, dst, 0)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			left, err := queue.OpsOf(dead).Peek(ctx, 0)
			require.NoError(t, err)
			require.Empty(t, left)

			moved, err := queue.OpsOf(work).Peek(ctx, 0)
			require.NoError(t, err)
			require.Len(t, moved, 5)
			bodies := map[string]bool{}
			for _, m := range moved {
				bodies[string(m.Body)] = true
				require.NotEmpty(t, m.Attributes["baton-key"], "attributes kept")
			}
			for _, m := range msgs {
				require.True(t, bodies[string(m.Body)], "body kept: %s", m.Body)
			}
		})
	}
}

// failingSender refuses every batch.
type failingSender struct{}

func (failingSender) SendBatch(context.Context, []queue.Message) error {
	return errors.New("refused")
}

// A send that fails leaves the messages it did not send in the source,
// visible again at once.
func TestMoveByReceivingReleasesUnsent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	src, err := sqlite.OpenQueue(ctx, db, "src", nil)
	require.NoError(t, err)
	_, err = queue.SendAll(ctx, src, deadLetters(3), nil)
	require.NoError(t, err)

	n, err := queue.MoveByReceiving(ctx, src, failingSender{}, 0)
	require.ErrorContains(t, err, "refused")
	require.Zero(t, n)
	d, err := src.Depth(ctx)
	require.NoError(t, err)
	require.Equal(t, queue.Depth{Visible: 3}, d)
}

func TestDepthTotal(t *testing.T) {
	t.Parallel()
	require.Equal(t, 6, queue.Depth{Visible: 1, InFlight: 2, Delayed: 3, Approximate: true}.Total())
	require.Zero(t, queue.Depth{}.Total())
}
