package consumer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// visibilityQueue is a memQueue that can also hide a received message
// longer: it records every change.
type visibilityQueue struct {
	*memQueue
	mu      sync.Mutex
	changes []queue.ChangeVisibilityParams
}

func (q *visibilityQueue) ChangeVisibility(_ context.Context, p queue.ChangeVisibilityParams) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.changes = append(q.changes, p)
	return nil
}

func (q *visibilityQueue) changed() []queue.ChangeVisibilityParams {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queue.ChangeVisibilityParams(nil), q.changes...)
}

// bubbleSetup is setup for a test inside a synctest bubble: the consumer
// reads the bubble's clock (time.Now), so the claim's timers and the
// times it writes agree.
func bubbleSetup(t *testing.T) (*bundle, *visibilityQueue) {
	t.Helper()
	b := setup(t)
	q := &visibilityQueue{memQueue: b.work}
	b.consumer.Queue = q
	b.consumer.NowFunc = nil
	// A run of the bubble's own time (which starts in 2000).
	ctx, now := t.Context(), time.Now()
	run, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: now.Truncate(time.Minute), Fence: 1, Now: now})
	require.NoError(t, err)
	_, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(b.def.Assets), Done: true, Now: now})
	require.NoError(t, err)
	b.run = run.ID
	return b, q
}

// handleAsync handles one message on its own goroutine; the result comes
// on the channel.
func handleAsync(b *bundle, asset string) <-chan consumer.Result {
	out := make(chan consumer.Result, 1)
	d := b.deliveries(b.message(asset))
	go func() { out <- b.consumer.Handle(context.Background(), time.Time{}, d) }()
	return out
}

// Cancelling an item stops the processor working on it: the claim's own
// check (a third of the lease after the last contact) sees CANCELLED and
// ends the processor's context with baton.ErrCancelled as its cause; the
// processor's late result is refused and the item stays CANCELLED; the
// message is acknowledged.
func TestCancelStopsTheProcessor(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, _ := bubbleSetup(t)
		lease := b.def.Limits.ItemLease
		started := make(chan struct{})
		var cause error
		var stoppedAt time.Time
		b.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
			close(started)
			<-ctx.Done() // a processor that never heartbeats
			cause, stoppedAt = context.Cause(ctx), time.Now()
			return []byte("late result"), nil, true
		})
		res := handleAsync(b, "EURUSD")
		<-started
		cancelledAt := time.Now()
		_, err := b.ledger.Cancel(t.Context(), ledger.CancelParams{Key: b.key("EURUSD"), Reason: "cancelled by ops", Now: cancelledAt})
		require.NoError(t, err)

		r := <-res
		require.Empty(t, r.Failed, "the item is terminal: its message is acknowledged")
		require.Equal(t, consumer.StatusCancelled, r.Items[0].Status)
		require.ErrorIs(t, cause, baton.ErrCancelled)
		require.ErrorContains(t, cause, "cancelled by ops")
		require.LessOrEqual(t, stoppedAt.Sub(cancelledAt), lease/3, "within a third of the lease (the bubble's clock)")
		it := b.item(t, "EURUSD")
		require.Equal(t, ledger.ItemCancelled, it.State)
		require.Equal(t, "cancelled by ops", it.Error)
		require.Empty(t, it.Result, "the late result was refused")
	})
}

// The claim's check goes on while the processor runs: skipped a third of
// the lease after a heartbeat (which wrote the claim), made at the next
// third, and made again at the one after, where it finds the item
// cancelled meanwhile and ends the processor's context with
// baton.ErrCancelled (not at the extended lease's end, as it would with
// no check after the first).
func TestClaimChecksWhileTheProcessorRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, _ := bubbleSetup(t)
		every := b.def.Limits.ItemLease / 3
		var cause error
		var stoppedAt time.Time
		start := time.Now()
		b.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
			time.Sleep(every / 2)
			if err := tk.Heartbeat(ctx); err != nil {
				return nil, err, true
			}
			<-ctx.Done()
			cause, stoppedAt = context.Cause(ctx), time.Now()
			return []byte("late result"), nil, true
		})
		res := handleAsync(b, "EURUSD")
		time.Sleep(every*5/2 - time.Since(start)) // after the check at 2 × every
		_, err := b.ledger.Cancel(t.Context(), ledger.CancelParams{Key: b.key("EURUSD"), Reason: "cancelled by ops", Now: time.Now()})
		require.NoError(t, err)
		r := <-res
		require.Equal(t, consumer.StatusCancelled, r.Items[0].Status)
		require.ErrorIs(t, cause, baton.ErrCancelled)
		require.Equal(t, start.Add(3*every), stoppedAt, "at the third check")
	})
}

// A processor that heartbeats keeps its item past the lease: another
// consumer cannot take it over, and the message's visibility follows the
// claim. Without heartbeats the context ends with the lease.
func TestHeartbeatKeepsALongItem(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, q := bubbleSetup(t)
		lease, skew := b.def.Limits.ItemLease, b.def.Limits.ClockSkew
		var untils []time.Time
		b.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
			for range 9 { // 9 × lease/3 = three leases
				time.Sleep(lease / 3)
				if err := tk.Heartbeat(ctx); err != nil {
					return nil, err, true
				}
				untils = append(untils, tk.Claim.Until())
				held, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: tk.Key, Owner: "thief", LeaseUntil: time.Now().Add(lease), Skew: skew, Now: time.Now()})
				if !errors.Is(err, ledger.ErrHeld) {
					return nil, errors.New("taken over while heartbeating"), true
				}
				_ = held
			}
			return []byte("done"), ctx.Err(), true
		})
		start := time.Now()
		r := <-handleAsync(b, "EURUSD")
		require.Empty(t, r.Failed)
		require.Equal(t, consumer.StatusSucceeded, r.Items[0].Status)
		it := b.item(t, "EURUSD")
		require.Equal(t, ledger.ItemSucceeded, it.State)
		require.Equal(t, 1, it.Attempt)
		require.Len(t, untils, 9)
		require.Equal(t, start.Add(3*lease+lease), untils[8], "each heartbeat: one lease from now")
		changes := q.changed()
		require.Len(t, changes, 9)
		for _, c := range changes {
			require.Equal(t, "r1", c.ReceiptHandle)
			require.Equal(t, lease+skew, c.Timeout)
		}

		// The same work without heartbeats loses its context at the lease.
		var cause error
		var ranFor time.Duration
		b.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
			t0 := time.Now()
			<-ctx.Done()
			cause, ranFor = context.Cause(ctx), time.Since(t0)
			return nil, ctx.Err(), true
		})
		r = <-handleAsync(b, "GBPUSD")
		require.Equal(t, consumer.StatusFailed, r.Items[0].Status)
		require.ErrorIs(t, cause, context.DeadlineExceeded)
		require.Equal(t, lease, ranFor)
	})
}

// A heartbeat from a stale attempt (the claim expired and another
// consumer took the item over) is refused: baton.ErrClaimLost, the
// processor's context ends, and nothing is written.
func TestStaleHeartbeatIsRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, _ := bubbleSetup(t)
		lease := b.def.Limits.ItemLease
		proceed := make(chan struct{})
		var hbErr, cause error
		b.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
			<-proceed // stuck past its lease, ignoring ctx
			hbErr = tk.Heartbeat(context.Background())
			cause = context.Cause(ctx)
			return []byte("stale"), nil, true
		})
		res := handleAsync(b, "EURUSD")
		time.Sleep(lease + b.def.Limits.ClockSkew)
		now := time.Now()
		taken, err := b.ledger.Claim(t.Context(), ledger.ClaimParams{Key: b.key("EURUSD"), Owner: "consumer-2", LeaseUntil: now.Add(lease), Now: now})
		require.NoError(t, err)
		require.Equal(t, 2, taken.Attempt)
		close(proceed)
		r := <-res
		require.ErrorIs(t, hbErr, baton.ErrClaimLost)
		require.ErrorIs(t, cause, context.DeadlineExceeded, "the context ended with the lease, before the refused heartbeat")
		require.Equal(t, consumer.StatusFailed, r.Items[0].Status, "the stale completion is refused")
		it := b.item(t, "EURUSD")
		require.Equal(t, ledger.ItemRunning, it.State)
		require.Equal(t, "consumer-2", it.Owner)
		require.Equal(t, taken.LeaseUntil, it.LeaseUntil, "the stale heartbeat wrote nothing")
	})
}

// hangingChecks is a store whose item reads hang, once hang is set, until
// the caller's context ends or release is closed: a claim check stuck on
// a slow store.
type hangingChecks struct {
	ledger.Store
	hang    chan struct{} // closed: reads hang from then on
	release chan struct{}
}

func (s *hangingChecks) GetItem(ctx context.Context, key baton.ItemKey) (ledger.Item, error) {
	select {
	case <-s.hang:
		select {
		case <-ctx.Done():
			return ledger.Item{}, ctx.Err()
		case <-s.release:
		}
	default:
	}
	return s.Store.GetItem(ctx, key)
}

// A claim check stuck on a slow store does not hold the claim's expiry
// back: the processor's context ends when the lease runs out without a
// heartbeat, whatever the check is doing.
func TestClaimExpiresWhileACheckHangs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, _ := bubbleSetup(t)
		lease := b.def.Limits.ItemLease
		s := &hangingChecks{Store: b.consumer.Ledger, hang: make(chan struct{}), release: make(chan struct{})}
		b.consumer.Ledger = s
		type stop struct {
			at    time.Time
			cause error
		}
		stopped := make(chan stop, 1)
		b.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
			close(s.hang) // the claim's checks hang from now on
			<-ctx.Done()  // a processor that never heartbeats
			stopped <- stop{time.Now(), context.Cause(ctx)}
			return nil, ctx.Err(), true
		})
		start := time.Now()
		res := handleAsync(b, "EURUSD")
		time.Sleep(2 * lease)
		var got stop
		select {
		case got = <-stopped:
		default:
		}
		close(s.release)
		<-res
		require.Equal(t, start.Add(lease), got.at, "at the lease's end, not when the check returned")
		require.ErrorIs(t, got.cause, context.DeadlineExceeded)
	})
}
