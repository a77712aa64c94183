package ops_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/ops"
	"github.com/batonhq/baton/internal/queue"
)

func setup(t *testing.T) (backend.Backend, *baton.Catalog) {
	t.Helper()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b, baton.MustCatalog(baton.Job{Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD"},
		Processor: baton.ProcessorFunc(nil)})
}

// Whether a lease is live is decided by the operator's clock: the same
// record is refused at one time and taken over at a later one.
func TestReleaseLeaseUsesTheOperatorsClock(t *testing.T) {
	t.Parallel()
	b, c := setup(t)
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l, err := b.Leases.Acquire(t.Context(), lease.AcquireParams{Job: "fx", Owner: "coordinator-a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)
	now := t0.Add(30 * time.Second)
	op, err := ops.New(b, c, &ops.Options{Owner: "tester", NowFunc: func() time.Time { return now }})
	require.NoError(t, err)

	_, err = op.ReleaseLease(t.Context(), ops.ReleaseParams{Job: "fx", Owner: "coordinator-a", Fence: l.Fence})
	var live *ops.LeaseLiveError
	require.ErrorAs(t, err, &live)
	require.Equal(t, now, live.Now)
	require.Equal(t, "coordinator-a", live.Lease.Owner)

	now = t0.Add(10 * time.Minute)
	res, err := op.ReleaseLease(t.Context(), ops.ReleaseParams{Job: "fx", Owner: "coordinator-a", Fence: l.Fence})
	require.NoError(t, err)
	require.Equal(t, ops.LeaseReleasedExpired, res.Outcome)
	require.Equal(t, l.Fence+1, res.TakeoverFence)
	cur, err := b.Leases.Inspect(t.Context(), "fx")
	require.NoError(t, err)
	require.Empty(t, cur.Owner)
}

// DeadLetters predicts a redrive with the operator's clock: a message of
// a tick after now is rejected, one whose claim is live is retried after
// it, and the age is measured from now.
func TestDeadLettersUseTheOperatorsClock(t *testing.T) {
	t.Parallel()
	b, c := setup(t)
	ctx := t.Context()
	future := ledger.ItemKey{Run: baton.RunID{Job: "fx", Nominal: time.Now().Add(24 * time.Hour).Truncate(time.Hour), Generation: 1}, Asset: "EURUSD"}
	require.NoError(t, b.DeadLetter.SendBatch(ctx, []queue.Message{message.New(future, 1, false).QueueMessage()}))
	now := time.Now()
	op, err := ops.New(b, c, &ops.Options{NowFunc: func() time.Time { return now }})
	require.NoError(t, err)
	rows, err := op.DeadLetters(ctx, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "rejected again (future tick)", rows[0].OnRedrive)

	now = now.Add(48 * time.Hour)
	rows, err = op.DeadLetters(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, "rejected again (the tick has no run)", rows[0].OnRedrive)
	require.Greater(t, rows[0].AgeSeconds, float64(47*3600))

	_, err = op.DeadLetters(ctx, 0)
	require.ErrorContains(t, err, "at least 1")
	nodlq := b
	nodlq.DeadLetter = nil
	op, err = ops.New(nodlq, c, nil)
	require.NoError(t, err)
	_, err = op.Redrive(ctx, 0)
	require.ErrorIs(t, err, ops.ErrNoDeadLetterQueue)
	require.EqualError(t, err, "the sqlite backend has no dead-letter queue configured")
}
