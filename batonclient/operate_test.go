package batonclient_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// opsBundle is a client on a fresh embedded store, the store's ports
// opened beside it (what another process sees), and a count of the
// items processed.
type opsBundle struct {
	client    *batonclient.Client
	b         backend.Backend
	processed *atomic.Int64
}

// tick is the tick the tests run: rate(1 hour) at noon, well in the past.
var tick = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func setupOps(t *testing.T) *opsBundle {
	t.Helper()
	var processed atomic.Int64
	catalog := baton.MustCatalog(baton.Job{
		Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD", "USDJPY"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			processed.Add(1)
			return []byte("ok"), nil
		}),
	})
	path := filepath.Join(t.TempDir(), "baton.db")
	client, err := batonclient.Open(t.Context(), catalog, &batonclient.Options{Store: path, Owner: "ops-test"})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	b, err := sqlitebackend.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return &opsBundle{client: client, b: b, processed: &processed}
}

// runTick runs the tick to the end with the client's consumers.
func (o *opsBundle) runTick(t *testing.T) baton.RunID {
	t.Helper()
	stop := work(t.Context(), o.client)
	defer stop()
	rep, err := o.client.ReplayTick(t.Context(), "fx", tick, false, 0)
	require.NoError(t, err)
	require.Equal(t, "opened", rep.Outcome)
	st, err := o.client.Wait(t.Context(), rep.Run, 10*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, "complete", st.State)
	return rep.Run
}

// Cancel cancels what is not terminal, a RUNNING item included, and
// refuses a named item that already SUCCEEDED, an unknown run, an unknown
// item and an older generation.
func TestClientCancel(t *testing.T) {
	t.Parallel()
	o := setupOps(t)
	ctx := t.Context()

	// In flight: fanned out, nobody consuming; USDJPY claimed by a worker.
	rep, err := o.client.ReplayTick(ctx, "fx", tick, false, 0)
	require.NoError(t, err)
	now := time.Now()
	_, err = o.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: rep.Run, Asset: "USDJPY"}, Owner: "w", LeaseUntil: now.Add(time.Hour), Fence: 1, Now: now})
	require.NoError(t, err)

	res, err := o.client.Cancel(ctx, rep.Run, "bad provider data")
	require.NoError(t, err)
	require.Equal(t, []batonclient.CancelledItem{
		{Item: "EURUSD", Was: "PENDING", Now: "CANCELLED", Changed: true},
		{Item: "USDJPY", Was: "RUNNING", Now: "CANCELLED", Changed: true},
	}, res.Items)
	require.Equal(t, 2, res.Cancelled)
	require.Equal(t, "partial", res.Run.State)
	it, err := o.b.Ledger.GetItem(ctx, ledger.ItemKey{Run: rep.Run, Asset: "USDJPY"})
	require.NoError(t, err)
	require.Equal(t, "bad provider data", it.Error)

	// Again: nothing left to cancel; a cancelled item named is no refusal.
	res, err = o.client.CancelItem(ctx, rep.Run, "EURUSD", "")
	require.NoError(t, err)
	require.Equal(t, 1, res.AlreadyTerminal)

	// A SUCCEEDED item is never overwritten.
	next := o.runTick2(t)
	res, err = o.client.CancelItem(ctx, next, "EURUSD", "too late")
	require.ErrorIs(t, err, batonclient.ErrItemTerminal)
	require.Equal(t, []batonclient.CancelledItem{{Item: "EURUSD", Was: "SUCCEEDED", Now: "SUCCEEDED"}}, res.Items)
	require.Equal(t, "complete", res.Run.State)

	_, err = o.client.CancelItem(ctx, next, "DOGE", "")
	require.ErrorIs(t, err, batonclient.ErrUnknownItem)
	_, err = o.client.Cancel(ctx, baton.RunID{Job: "fx", Nominal: tick.Add(-time.Hour), Generation: 1}, "")
	require.ErrorIs(t, err, batonclient.ErrNotFound)
	_, err = o.client.Cancel(ctx, rep.Run, "")
	require.NoError(t, err, "generation 1 of the first tick is still current")
	_, err = o.client.ReplayItem(ctx, next, "EURUSD", true)
	require.NoError(t, err)
	_, err = o.client.Cancel(ctx, next, "")
	require.ErrorIs(t, err, batonclient.ErrSuperseded, "%s has a generation 2 now", next)
}

// runTick2 runs the tick after tick to the end.
func (o *opsBundle) runTick2(t *testing.T) baton.RunID {
	t.Helper()
	stop := work(t.Context(), o.client)
	defer stop()
	rep, err := o.client.ReplayTick(t.Context(), "fx", tick.Add(time.Hour), false, 0)
	require.NoError(t, err)
	_, err = o.client.Wait(t.Context(), rep.Run, 10*time.Millisecond)
	require.NoError(t, err)
	return rep.Run
}

// Pause skips the job's ticks (recorded, counted) until Resume; a
// replay of a paused job's tick is refused unless forced.
func TestClientPauseResume(t *testing.T) {
	t.Parallel()
	o := setupOps(t)
	ctx := t.Context()
	p, err := o.client.Pause(ctx, "fx", "provider outage")
	require.NoError(t, err)
	require.True(t, p.Paused)
	require.True(t, p.Changed)
	require.Equal(t, "ops-test", p.By, "the client's owner")
	p, err = o.client.Pause(ctx, "fx", "")
	require.NoError(t, err)
	require.False(t, p.Changed, "pausing a paused job changes nothing")
	require.Equal(t, "provider outage", p.Reason)

	_, err = o.client.ReplayTick(ctx, "fx", tick, false, 0)
	require.ErrorIs(t, err, batonclient.ErrPaused)
	rep, err := o.client.ReplayTick(ctx, "fx", tick, true, 0)
	require.NoError(t, err, "force runs a paused job's tick")
	require.Equal(t, "opened", rep.Outcome)

	p, err = o.client.Resume(ctx, "fx", "")
	require.NoError(t, err)
	require.False(t, p.Paused)
	require.True(t, p.Changed)
	require.EqualValues(t, 1, p.Skipped)
	require.Equal(t, tick, p.LastSkipped.UTC())
	require.Equal(t, "resumed by ops-test", p.Reason)
	p, err = o.client.Resume(ctx, "fx", "")
	require.NoError(t, err)
	require.False(t, p.Changed, "resuming a job that is not paused changes nothing")

	_, err = o.client.Pause(ctx, "nope", "")
	require.ErrorIs(t, err, baton.ErrUnknownJob)
}

// Redrive moves dead letters back, at most max at a time; the message of
// an item that SUCCEEDED meanwhile is acknowledged without running.
func TestClientRedrive(t *testing.T) {
	t.Parallel()
	o := setupOps(t)
	ctx := t.Context()
	run := o.runTick(t)
	require.EqualValues(t, 2, o.processed.Load())
	// A dead letter of an item that SUCCEEDED since.
	require.NoError(t, o.b.DeadLetter.SendBatch(ctx, []queue.Message{
		message.New(ledger.ItemKey{Run: run, Asset: "EURUSD"}, 1, false).QueueMessage(),
	}))
	res, err := o.client.Redrive(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, 1, res.Moved)
	require.True(t, res.LeftKnown)
	require.Equal(t, 0, res.Left)
	depth, err := queue.OpsOf(o.b.Work).Depth(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, depth.Total(), "the dead letter is back in the work queue")

	stop := work(ctx, o.client)
	require.Eventually(t, func() bool {
		d, err := queue.OpsOf(o.b.Work).Depth(ctx)
		return err == nil && d.Total() == 0
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	require.EqualValues(t, 2, o.processed.Load(), "a SUCCEEDED item is not run again")

	res, err = o.client.Redrive(ctx, 0)
	require.NoError(t, err)
	require.Zero(t, res.Moved)
	_, err = o.client.Redrive(ctx, -1)
	require.ErrorContains(t, err, "must not be negative")
}

// ReleaseLease keeps the CLI's guards: a live lease is refused without
// ForceLive, owner and fence must match, an expired lease is taken over
// with the next fence and released.
func TestClientReleaseLease(t *testing.T) {
	t.Parallel()
	o := setupOps(t)
	ctx := t.Context()
	_, err := o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "x", Fence: 1})
	require.ErrorIs(t, err, batonclient.ErrNoLease)

	now := time.Now()
	live, err := o.b.Leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "coordinator-a", TTL: time.Hour, Now: now})
	require.NoError(t, err)
	l, err := o.client.Lease(ctx, "fx")
	require.NoError(t, err)
	require.Equal(t, batonclient.Lease{Job: "fx", Owner: "coordinator-a", Fence: live.Fence, ExpiresAt: l.ExpiresAt, AcquiredAt: l.AcquiredAt, Live: true}, l)

	_, err = o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-a", Fence: live.Fence})
	require.ErrorIs(t, err, batonclient.ErrLeaseLive)
	require.ErrorContains(t, err, `"coordinator-a" holds the lease of fx`)
	_, err = o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-a", Fence: live.Fence + 1, ForceLive: true})
	require.ErrorIs(t, err, batonclient.ErrLeaseChanged, "the fence must match, even forced")
	_, err = o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-b", Fence: live.Fence, ForceLive: true})
	require.ErrorIs(t, err, batonclient.ErrLeaseChanged, "the owner must match, even forced")
	cur, err := o.b.Leases.Inspect(ctx, "fx")
	require.NoError(t, err)
	require.Equal(t, "coordinator-a", cur.Owner, "nothing refused was released")

	res, err := o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-a", Fence: live.Fence, ForceLive: true})
	require.NoError(t, err)
	require.Equal(t, batonclient.LeaseReleasedLive, res.Outcome)
	require.True(t, res.Lease.Live)
	cur, err = o.b.Leases.Inspect(ctx, "fx")
	require.NoError(t, err)
	require.Empty(t, cur.Owner)
	require.Equal(t, live.Fence, cur.Fence, "a live lease is released as it is")

	// A coordinator that died ten minutes ago: taken over, then released.
	dead, err := o.b.Leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "coordinator-dead", TTL: time.Minute, Now: now.Add(-10 * time.Minute)})
	require.NoError(t, err)
	res, err = o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-dead", Fence: dead.Fence})
	require.NoError(t, err)
	require.Equal(t, batonclient.LeaseReleasedExpired, res.Outcome)
	require.False(t, res.Lease.Live)
	require.Equal(t, dead.Fence+1, res.TakeoverFence)
	_, err = o.b.Leases.Renew(ctx, lease.RenewParams{Job: "fx", Owner: "coordinator-dead", Fence: dead.Fence, TTL: time.Minute, Now: time.Now()})
	require.ErrorIs(t, err, lease.ErrNotHolder, "the dead holder's fence is refused")
	res, err = o.client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-dead", Fence: dead.Fence})
	require.NoError(t, err)
	require.Equal(t, batonclient.LeaseAlreadyFree, res.Outcome)
}

// ReplayItem refuses an item under a live claim unless forced, and a
// forced re-run of a terminal item while another coordinator holds the
// job's lease; ReplayTick reports a held lease.
func TestClientReplayItemGuards(t *testing.T) {
	t.Parallel()
	o := setupOps(t)
	ctx := t.Context()
	rep, err := o.client.ReplayTick(ctx, "fx", tick, false, 0)
	require.NoError(t, err)
	now := time.Now()
	_, err = o.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: rep.Run, Asset: "USDJPY"}, Owner: "w", LeaseUntil: now.Add(time.Hour), Fence: 1, Now: now})
	require.NoError(t, err)

	_, err = o.client.ReplayItem(ctx, rep.Run, "USDJPY", false)
	require.ErrorIs(t, err, batonclient.ErrItemHeld)
	got, err := o.client.ReplayItem(ctx, rep.Run, "USDJPY", true)
	require.NoError(t, err)
	require.Equal(t, batonclient.ItemReplayed{Outcome: batonclient.ItemEnqueued, Run: rep.Run, Was: "RUNNING"}, got)
	got, err = o.client.ReplayItem(ctx, rep.Run, "EURUSD", false)
	require.NoError(t, err)
	require.Equal(t, batonclient.ItemReplayed{Outcome: batonclient.ItemEnqueued, Run: rep.Run, Was: "PENDING"}, got)
	_, err = o.client.ReplayItem(ctx, rep.Run, "DOGE", false)
	require.ErrorContains(t, err, `no asset or derived item "DOGE"`)
	_, err = o.client.ReplayItem(ctx, baton.RunID{Job: "fx", Nominal: tick.Add(-time.Hour), Generation: 1}, "EURUSD", false)
	require.ErrorIs(t, err, batonclient.ErrNotFound)

	// Another coordinator holds the lease: a tick's replay is refused.
	_, err = o.b.Leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "coordinator-a", TTL: time.Hour, Now: time.Now()})
	require.NoError(t, err)
	_, err = o.client.ReplayTick(ctx, "fx", tick.Add(time.Hour), false, 0)
	require.ErrorIs(t, err, batonclient.ErrLeaseHeld)
	require.ErrorContains(t, err, "coordinator-a")
}
