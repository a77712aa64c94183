package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// tripCounter counts the round trips of a pool: each statement and each
// batch sent.
type tripCounter struct{ n atomic.Int64 }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// countedLedger opens a fresh database and returns its ledger on a pool
// whose round trips trips counts.
func countedLedger(t *testing.T) (*LedgerStore, *tripCounter) {
	t.Helper()
	base := openTestDB(t) // the schema
	cfg, err := pgxpool.ParseConfig(base.pool.Config().ConnString())
	require.NoError(t, err)
	trips := &tripCounter{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return NewLedgerStore(New(pool)), trips
}

// A batch of claims is one round trip when every claim applies, and a
// claim refused inside it (the item held by another owner's live claim,
// or terminal) is reported for that item alone, with its own record and
// sentinel, while the others are claimed. Refusals cost one more round
// trip for the whole batch, not one per item.
func TestClaimBatch(t *testing.T) {
	t.Parallel()
	s, trips := countedLedger(t)
	ctx := t.Context()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	run, _, err := s.OpenRun(ctx, ledger.OpenRunParams{Job: "batch", Nominal: now, Fence: 1, Now: now})
	require.NoError(t, err)
	key := func(i int) ledger.ItemKey { return ledger.ItemKey{Run: run.ID, Asset: fmt.Sprintf("A%03d", i)} }
	params := func(keys ...ledger.ItemKey) []ledger.ClaimParams {
		ps := make([]ledger.ClaimParams, len(keys))
		for i, k := range keys {
			ps[i] = ledger.ClaimParams{Key: k, Owner: "me", LeaseUntil: now.Add(time.Minute), Fence: 1, MaxAttempts: 3, Now: now}
		}
		return ps
	}

	// All new: one round trip for ten claims.
	keys := make([]ledger.ItemKey, 10)
	for i := range keys {
		keys[i] = key(i)
	}
	before := trips.n.Load()
	outs := s.ClaimBatch(ctx, params(keys...))
	require.Equal(t, int64(1), trips.n.Load()-before, "round trips for a batch of 10 claims that all apply")
	for i, o := range outs {
		require.NoError(t, o.Err, "entry %d", i)
		require.Equal(t, keys[i], o.Item.Key, "entry %d: outcomes in the entries' order", i)
		require.Equal(t, ledger.ItemRunning, o.Item.State)
		require.Equal(t, "me", o.Item.Owner)
		require.Equal(t, 1, o.Item.Attempt)
	}

	// Item 100 held by another owner's live claim, item 101 succeeded, 102
	// and 103 new; given out of key order.
	_, err = s.Claim(ctx, ledger.ClaimParams{Key: key(100), Owner: "other", LeaseUntil: now.Add(time.Hour), Fence: 1, Now: now})
	require.NoError(t, err)
	_, err = s.Claim(ctx, ledger.ClaimParams{Key: key(101), Owner: "other", LeaseUntil: now.Add(time.Hour), Fence: 1, Now: now})
	require.NoError(t, err)
	_, err = s.Complete(ctx, ledger.CompleteParams{Key: key(101), Owner: "other", Attempt: 1, Now: now})
	require.NoError(t, err)
	before = trips.n.Load()
	outs = s.ClaimBatch(ctx, params(key(103), key(100), key(102), key(101)))
	require.Equal(t, int64(2), trips.n.Load()-before, "round trips: the batch, then one batch for its refusals")
	require.NoError(t, outs[0].Err)
	require.Equal(t, "me", outs[0].Item.Owner)
	require.ErrorIs(t, outs[1].Err, ledger.ErrHeld)
	require.Equal(t, "other", outs[1].Item.Owner, "the refused entry carries the record that refused it")
	require.Equal(t, key(100), outs[1].Item.Key)
	require.NoError(t, outs[2].Err)
	require.Equal(t, key(102), outs[2].Item.Key)
	require.ErrorIs(t, outs[3].Err, ledger.ErrTerminal)
	require.Equal(t, ledger.ItemSucceeded, outs[3].Item.State)
	held, err := s.GetItem(ctx, key(100))
	require.NoError(t, err)
	require.Equal(t, "other", held.Owner, "the held item is untouched")
	require.Equal(t, 1, held.Attempt)

	// Attempts exhausted inside a batch: that item alone becomes DEAD.
	expired := now.Add(2 * time.Hour)
	_, err = s.Claim(ctx, ledger.ClaimParams{Key: key(200), Owner: "other", LeaseUntil: now, Fence: 1, Now: now})
	require.NoError(t, err)
	ps := params(key(200), key(201))
	for i := range ps {
		ps[i].Now, ps[i].LeaseUntil = expired, expired.Add(time.Minute)
	}
	ps[0].MaxAttempts, ps[1].MaxAttempts = 1, 5 // two jobs' limits in one batch
	before = trips.n.Load()
	outs = s.ClaimBatch(ctx, ps)
	require.Equal(t, int64(1), trips.n.Load()-before, "round trips: entries of different limits in the same one")
	require.ErrorIs(t, outs[0].Err, ledger.ErrTerminal)
	require.Equal(t, ledger.ItemDead, outs[0].Item.State)
	require.NoError(t, outs[1].Err)
	require.Equal(t, ledger.ItemRunning, outs[1].Item.State)
}

// A batch of completions is one round trip; one whose attempt or owner is
// not the item's is refused alone (ErrConflict, the item left RUNNING
// under its holder) and the others complete.
func TestCompleteBatch(t *testing.T) {
	t.Parallel()
	s, trips := countedLedger(t)
	ctx := t.Context()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	run, _, err := s.OpenRun(ctx, ledger.OpenRunParams{Job: "batch", Nominal: now, Fence: 1, Now: now})
	require.NoError(t, err)
	var ps []ledger.CompleteParams
	for i := range 10 {
		k := ledger.ItemKey{Run: run.ID, Asset: fmt.Sprintf("A%03d", i)}
		_, err := s.Claim(ctx, ledger.ClaimParams{Key: k, Owner: "me", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
		require.NoError(t, err)
		ps = append(ps, ledger.CompleteParams{Key: k, Owner: "me", Attempt: 1, Result: []byte(k.Asset), Now: now.Add(time.Second)})
	}
	before := trips.n.Load()
	outs := s.CompleteBatch(ctx, ps)
	require.Equal(t, int64(1), trips.n.Load()-before, "round trips for a batch of 10 completions that all apply")
	for i, o := range outs {
		require.NoError(t, o.Err, "entry %d", i)
		require.Equal(t, ledger.ItemSucceeded, o.Item.State)
		require.Equal(t, []byte(ps[i].Key.Asset), o.Item.Result)
	}

	var again []ledger.CompleteParams
	for i := range 4 {
		k := ledger.ItemKey{Run: run.ID, Asset: fmt.Sprintf("B%03d", i)}
		_, err := s.Claim(ctx, ledger.ClaimParams{Key: k, Owner: "me", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
		require.NoError(t, err)
		again = append(again, ledger.CompleteParams{Key: k, Owner: "me", Attempt: 1, Now: now.Add(time.Second)})
	}
	again[1].Attempt = 2      // a stale or future attempt
	again[2].Owner = "nobody" // another owner
	outs = s.CompleteBatch(ctx, again)
	require.NoError(t, outs[0].Err)
	require.NoError(t, outs[3].Err)
	for _, i := range []int{1, 2} {
		require.ErrorIs(t, outs[i].Err, ledger.ErrConflict, "entry %d", i)
		require.Equal(t, ledger.ItemRunning, outs[i].Item.State, "entry %d: the record that refused it", i)
		it, err := s.GetItem(ctx, again[i].Key)
		require.NoError(t, err)
		require.Equal(t, ledger.ItemRunning, it.State, "entry %d: left RUNNING", i)
		require.Equal(t, "me", it.Owner)
	}
	// The same item twice: the second entry is refused.
	k := ledger.ItemKey{Run: run.ID, Asset: "C"}
	_, err = s.Claim(ctx, ledger.ClaimParams{Key: k, Owner: "me", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
	require.NoError(t, err)
	p := ledger.CompleteParams{Key: k, Owner: "me", Attempt: 1, Now: now.Add(time.Second)}
	outs = s.CompleteBatch(ctx, []ledger.CompleteParams{p, p})
	require.NoError(t, outs[0].Err)
	require.ErrorIs(t, outs[1].Err, ledger.ErrConflict)
}

// Several ranges of a run's items are read in one round trip, each as
// ListItemRange reads it.
func TestListItemRanges(t *testing.T) {
	t.Parallel()
	s, trips := countedLedger(t)
	ctx := t.Context()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	run, _, err := s.OpenRun(ctx, ledger.OpenRunParams{Job: "ranges", Nominal: now, Fence: 1, Now: now})
	require.NoError(t, err)
	var ps []ledger.ClaimParams
	for i := range 30 {
		ps = append(ps, ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: fmt.Sprintf("A%03d", i)}, Owner: "me", LeaseUntil: now.Add(time.Minute), Now: now})
	}
	for _, o := range s.ClaimBatch(ctx, ps) {
		require.NoError(t, o.Err)
	}
	ranges := []ledger.ItemRange{{First: "A000", Last: "A009"}, {First: "A025", Last: "A099"}, {First: "B", Last: "C"}, {First: "A003", Last: "A004"}}
	before := trips.n.Load()
	got, err := s.ListItemRanges(ctx, run.ID, ranges)
	require.NoError(t, err)
	require.Equal(t, int64(1), trips.n.Load()-before, "one round trip for the ranges")
	require.Len(t, got, len(ranges))
	for i, r := range ranges {
		want, err := s.ListItemRange(ctx, run.ID, r.First, r.Last)
		require.NoError(t, err)
		require.Equal(t, want, got[i], "range %d", i)
	}
	require.Len(t, got[0], 10)
	require.Len(t, got[1], 5)
	require.Empty(t, got[2])
}
