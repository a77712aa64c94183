package consumer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
)

// batchLedger is a ledger with the batched abilities (as PostgreSQL's),
// each entry written by the store below: it records the calls.
type batchLedger struct {
	ledger.Store
	mu        sync.Mutex
	claims    [][]string // the items of each ClaimBatch call
	completes [][]string // the items of each CompleteBatch call
	single    []string   // Claim and Complete called alone
}

var (
	_ ledger.BatchClaimer   = (*batchLedger)(nil)
	_ ledger.BatchCompleter = (*batchLedger)(nil)
)

func (l *batchLedger) ClaimBatch(ctx context.Context, ps []ledger.ClaimParams) []ledger.Outcome {
	out := make([]ledger.Outcome, len(ps))
	var names []string
	for i, p := range ps {
		names = append(names, p.Key.Asset)
		out[i].Item, out[i].Err = l.Store.Claim(ctx, p)
	}
	l.mu.Lock()
	l.claims = append(l.claims, names)
	l.mu.Unlock()
	return out
}

func (l *batchLedger) CompleteBatch(ctx context.Context, ps []ledger.CompleteParams) []ledger.Outcome {
	out := make([]ledger.Outcome, len(ps))
	var names []string
	for i, p := range ps {
		names = append(names, p.Key.Asset)
		out[i].Item, out[i].Err = l.Store.Complete(ctx, p)
	}
	l.mu.Lock()
	l.completes = append(l.completes, names)
	l.mu.Unlock()
	return out
}

func (l *batchLedger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	l.mu.Lock()
	l.single = append(l.single, "claim "+p.Key.Asset)
	l.mu.Unlock()
	return l.Store.Claim(ctx, p)
}

func (l *batchLedger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	l.mu.Lock()
	l.single = append(l.single, "complete "+p.Key.Asset)
	l.mu.Unlock()
	return l.Store.Complete(ctx, p)
}

// On a ledger that claims and completes many items at once, a batch's
// plain item messages are claimed in one call and completed in one call;
// an item whose claim is refused inside the batch (held by another
// owner's live claim) is that message's verdict alone (held, redelivered),
// and the others are processed and completed. The derived item's message
// takes the one-by-one path (its inputs' check comes before its claim).
func TestBatchClaimAndComplete(t *testing.T) {
	b := setup(t)
	bl := &batchLedger{Store: b.ledger}
	b.consumer.Ledger = bl
	ctx := context.Background()
	held := fx.Assets[2]
	_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: b.key(held), Owner: "other", LeaseUntil: t0.Add(time.Hour), Fence: 1, Now: t0})
	require.NoError(t, err)

	batch := b.deliveries(append(b.fanOut(), b.message(fx.DXY))...)
	res := b.consumer.Handle(ctx, time.Time{}, batch)

	st := statuses(res)
	for i, a := range fx.Assets {
		want := consumer.StatusSucceeded
		if a == held {
			want = consumer.StatusHeld
		}
		require.Equal(t, want, st[batch[i].MessageID], "asset %s", a)
	}
	require.Equal(t, consumer.StatusHeld, st[batch[len(fx.Assets)].MessageID], "the derived item: inputs pending")
	require.ElementsMatch(t, []string{batch[2].MessageID, batch[len(fx.Assets)].MessageID}, failedIDs(res.Failed))
	require.Zero(t, b.proc.count(b.key(held)), "the held item is not processed")
	it := b.item(t, held)
	require.Equal(t, "other", it.Owner, "the held item is left to its holder")
	require.Equal(t, ledger.ItemRunning, it.State)

	require.Equal(t, [][]string{fx.Assets}, bl.claims, "one claim call for the batch's plain items")
	var done []string
	for _, a := range fx.Assets {
		if a != held {
			done = append(done, a)
			require.Equal(t, ledger.ItemSucceeded, b.item(t, a).State, a)
		}
	}
	require.Len(t, bl.completes, 1, "one completion call for the items that succeeded")
	require.ElementsMatch(t, done, bl.completes[0])
	require.Empty(t, bl.single, "no item claimed or completed alone")
}

// stoppingLedger closes stop at the first run read: a stop that comes
// while a wave's messages are being vouched for.
type stoppingLedger struct {
	*batchLedger
	once sync.Once
	stop chan struct{}
}

func (l *stoppingLedger) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	l.once.Do(func() { close(l.stop) })
	return l.batchLedger.GetRun(ctx, job, nominal)
}

// A stop that comes after a wave's gates, before its claims: nothing is
// claimed, every message is given back (released) to be delivered again.
func TestBatchStopBeforeTheClaims(t *testing.T) {
	b := setup(t)
	sl := &stoppingLedger{batchLedger: &batchLedger{Store: b.ledger}, stop: make(chan struct{})}
	b.consumer.Ledger, b.consumer.Stop = sl, sl.stop
	batch := b.deliveries(b.fanOut()...)
	res := b.consumer.Handle(context.Background(), time.Time{}, batch)
	for _, d := range batch {
		require.Equal(t, consumer.StatusReleased, statuses(res)[d.MessageID], d.MessageID)
	}
	require.Len(t, res.Failed, len(batch), "every message delivered again")
	require.Empty(t, sl.claims, "nothing claimed after the stop")
	require.Zero(t, b.proc.total())
	for _, a := range fx.Assets {
		_, err := b.ledger.GetItem(context.Background(), b.key(a))
		require.ErrorIs(t, err, ledger.ErrNotFound, a)
	}
}
