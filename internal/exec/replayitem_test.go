package exec

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/clocktest"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// hookLedger calls its hooks around the item writes and reads of the
// replay's new generation (generation 2), and after OpenRun.
type hookLedger struct {
	ledger.Store
	// beforeWriteFunc runs before Claim, Complete, Fail and Cancel of a
	// generation-2 item.
	beforeWriteFunc func(op string, key ledger.ItemKey)
	// afterGetFunc runs after GetItem of a generation-2 item, with its error.
	afterGetFunc func(key ledger.ItemKey, err error)
	// afterOpenFunc runs after a successful OpenRun.
	afterOpenFunc func(run ledger.Run)
}

func (h *hookLedger) write(op string, key ledger.ItemKey) {
	if h.beforeWriteFunc != nil && key.Run.Generation == 2 {
		h.beforeWriteFunc(op, key)
	}
}

func (h *hookLedger) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	run, out, err := h.Store.OpenRun(ctx, p)
	if err == nil && h.afterOpenFunc != nil {
		h.afterOpenFunc(run)
	}
	return run, out, err
}

func (h *hookLedger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	h.write("claim", p.Key)
	return h.Store.Claim(ctx, p)
}

func (h *hookLedger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	h.write("complete", p.Key)
	return h.Store.Complete(ctx, p)
}

func (h *hookLedger) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	h.write("fail", p.Key)
	return h.Store.Fail(ctx, p)
}

func (h *hookLedger) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	h.write("cancel", p.Key)
	return h.Store.Cancel(ctx, p)
}

func (h *hookLedger) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	it, err := h.Store.GetItem(ctx, key)
	if h.afterGetFunc != nil && key.Run.Generation == 2 {
		h.afterGetFunc(key, err)
	}
	return it, err
}

// replayBundle is a finished run of a wide job (40 assets, a05 CANCELLED,
// a06 DEAD, the rest SUCCEEDED) on SQLite, a runtime on it whose clock the
// test moves, and the ledger hooks.
type replayBundle struct {
	e       *Runtime
	b       backend.Backend // unwrapped
	hooks   *hookLedger
	clock   *clocktest.Clock
	job     baton.Job
	run     ledger.RunID
	nominal time.Time
}

const (
	wideTTL  = time.Minute
	wideSkew = time.Second
)

func setupReplay(t *testing.T) *replayBundle {
	t.Helper()
	ctx := t.Context()
	b, err := sqlitebackend.Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	def := baton.Job{Name: "wide", Schedule: "rate(1 minute)",
		Limits: baton.Limits{LeaseTTL: wideTTL, ClockSkew: wideSkew, ItemLease: 30 * time.Second, MaxAttempts: 3, Concurrency: 4}}
	for i := range 40 {
		def.Assets = append(def.Assets, fmt.Sprintf("a%02d", i))
	}
	j := def
	j.Processor = baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })
	clock := clocktest.New(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	nominal := clock.Now().Add(-time.Hour)

	// Generation 1, finished.
	l := b.Ledger
	run, _, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: def.Name, Nominal: nominal, Fence: 1, Now: clock.Now()})
	require.NoError(t, err)
	var counts [3]int
	for _, a := range def.Assets {
		key := ledger.ItemKey{Run: run.ID, Asset: a}
		now := clock.Now()
		if a == "a05" {
			_, err := l.Cancel(ctx, ledger.CancelParams{Key: key, Reason: "delisted", Now: now})
			require.NoError(t, err)
			counts[2]++
			continue
		}
		it, err := l.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
		require.NoError(t, err)
		if a == "a06" {
			_, err = l.Fail(ctx, ledger.FailParams{Key: key, Owner: "w", Attempt: it.Attempt, Reason: "bad data", Permanent: true, Now: now})
			counts[1]++
		} else {
			_, err = l.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "w", Attempt: it.Attempt, Result: []byte(a), Now: now})
			counts[0]++
		}
		require.NoError(t, err)
	}
	_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(def.Assets), Done: true, Now: clock.Now()})
	require.NoError(t, err)
	_, err = l.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: counts[0], Dead: counts[1], Cancelled: counts[2], Now: clock.Now()})
	require.NoError(t, err)

	hooks := &hookLedger{Store: b.Ledger}
	wrapped := b
	wrapped.Ledger = hooks
	e, err := New(wrapped, Options{Catalog: baton.MustCatalog(j), Owner: "t", NowFunc: clock.Now})
	require.NoError(t, err)
	return &replayBundle{e: e, b: b, hooks: hooks, clock: clock, job: j, run: run.ID, nominal: nominal}
}

func (rb *replayBundle) items(t *testing.T, generation int) map[string]ledger.Item {
	t.Helper()
	id := rb.run
	id.Generation = generation
	items, err := rb.b.Ledger.ListItems(t.Context(), id)
	require.NoError(t, err)
	out := map[string]ledger.Item{}
	for _, it := range items {
		out[it.Key.Asset] = it
	}
	return out
}

// A forced replay copying many items while time passes keeps the job's
// lease: every copy write happens under its own live lease.
func TestReplayItemForceRenewsLease(t *testing.T) {
	t.Parallel()
	rb := setupReplay(t)
	ctx := t.Context()
	var unheld []string
	writes := 0
	rb.hooks.beforeWriteFunc = func(op string, key ledger.ItemKey) {
		writes++
		l, err := rb.b.Leases.Inspect(ctx, rb.job.Name)
		if (err != nil || !strings.Contains(l.Owner, "/replay#") || !l.Held(rb.clock.Now(), 0)) && len(unheld) < 3 {
			unheld = append(unheld, fmt.Sprintf("%s %s: lease %+v at %s (%v)", op, key, l, rb.clock.Now(), err))
		}
		rb.clock.Advance(10 * time.Second) // each write is slow: the copy outlasts the TTL many times
	}
	rep, err := rb.e.ReplayItem(ctx, rb.run, "a00", true)
	require.NoError(t, err)
	require.Equal(t, ItemNewGeneration, rep.Outcome)
	require.Len(t, rep.Carried, 39)
	require.Greater(t, time.Duration(writes)*10*time.Second, 10*wideTTL, "the copy outlasted the lease")
	require.Empty(t, unheld, "copy writes without the lease")

	items := rb.items(t, 2)
	require.Len(t, items, 39)
	require.Equal(t, ledger.ItemCancelled, items["a05"].State)
	require.Zero(t, items["a05"].Attempt, "carried as a cancel of an absent item")
	require.Equal(t, ledger.ItemDead, items["a06"].State)
	require.Equal(t, []byte("a07"), items["a07"].Result)
	run, err := rb.b.Ledger.GetRun(ctx, rb.job.Name, rb.nominal)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	l, err := rb.b.Leases.Inspect(ctx, rb.job.Name)
	require.NoError(t, err)
	require.Empty(t, l.Owner, "released at the end")
}

// A copier that stalls past its lease, taken over meanwhile by a
// coordinator that resumed the generation, stops before its next write.
func TestReplayItemForceStopsOnLostLease(t *testing.T) {
	t.Parallel()
	rb := setupReplay(t)
	ctx := t.Context()
	after := -1
	rb.hooks.beforeWriteFunc = func(op string, key ledger.ItemKey) {
		if after >= 0 {
			after++
		}
		if op != "complete" || key.Asset != "a04" {
			return
		}
		rb.clock.Advance(wideTTL + wideSkew + time.Second)
		now := rb.clock.Now()
		l, err := rb.b.Leases.Acquire(ctx, lease.AcquireParams{Job: rb.job.Name, Owner: "rival", TTL: wideTTL, Now: now, Skew: wideSkew})
		require.NoError(t, err)
		_, out, err := rb.b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: rb.job.Name, Nominal: rb.nominal, Fence: l.Fence, Now: now})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		after = 0 // this write was in flight; none may follow
	}
	_, err := rb.e.ReplayItem(ctx, rb.run, "a00", true)
	require.ErrorIs(t, err, lease.ErrNotHolder)
	require.ErrorContains(t, err, "left fanning out")
	require.Equal(t, 0, after, "writes after the lease was lost")
	require.Len(t, rb.items(t, 2), 4, "a01 to a04")
	l, err := rb.b.Leases.Inspect(ctx, rb.job.Name)
	require.NoError(t, err)
	require.Equal(t, "rival", l.Owner, "the rival's lease is left alone")
}

// A newer coordinator's resume of the generation (its fence on the run)
// stops the copy at the next check even while the copier's lease renews.
func TestReplayItemForceStopsOnResumedRun(t *testing.T) {
	t.Parallel()
	rb := setupReplay(t)
	ctx := t.Context()
	after := -1
	rb.hooks.beforeWriteFunc = func(op string, key ledger.ItemKey) {
		if after >= 0 {
			after++
		}
		if op != "complete" || key.Asset != "a03" {
			return
		}
		id := key.Run
		_, out, err := rb.b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: id.Job, Nominal: id.Nominal, Fence: 1000, Now: rb.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		rb.clock.Advance(wideTTL / 2) // the next item is due a check
		after = 0
	}
	_, err := rb.e.ReplayItem(ctx, rb.run, "a00", true)
	require.ErrorIs(t, err, ledger.ErrConflict)
	require.Equal(t, 0, after, "writes after the run was resumed")
}

// Carrying an outcome over never acts on an item the new generation
// already has: a live claim is not cancelled, a failed attempt not
// completed.
func TestReplayItemForceLeavesExistingItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		asset string
		// arrangeFunc gives the asset a record in the new generation.
		arrangeFunc func(t *testing.T, rb *replayBundle, key ledger.ItemKey)
		want        ledger.ItemState
	}{
		{"live claim of a cancelled item", "a05", func(t *testing.T, rb *replayBundle, key ledger.ItemKey) {
			now := rb.clock.Now()
			_, err := rb.b.Ledger.Claim(t.Context(), ledger.ClaimParams{Key: key, Owner: "live-worker", LeaseUntil: now.Add(time.Minute), Fence: 99, Now: now})
			require.NoError(t, err)
		}, ledger.ItemRunning},
		{"failed attempt of a succeeded item", "a03", func(t *testing.T, rb *replayBundle, key ledger.ItemKey) {
			now := rb.clock.Now()
			it, err := rb.b.Ledger.Claim(t.Context(), ledger.ClaimParams{Key: key, Owner: "live-worker", LeaseUntil: now.Add(time.Minute), Fence: 99, Now: now})
			require.NoError(t, err)
			_, err = rb.b.Ledger.Fail(t.Context(), ledger.FailParams{Key: key, Owner: "live-worker", Attempt: it.Attempt, Reason: "flaky", Now: now})
			require.NoError(t, err)
		}, ledger.ItemRunning}, // taken by the copier's claim, then released
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rb := setupReplay(t)
			rb.hooks.afterOpenFunc = func(run ledger.Run) {
				if run.ID.Generation == 2 {
					tc.arrangeFunc(t, rb, ledger.ItemKey{Run: run.ID, Asset: tc.asset})
				}
			}
			_, err := rb.e.ReplayItem(t.Context(), rb.run, "a00", true)
			require.ErrorIs(t, err, ledger.ErrConflict)
			it := rb.items(t, 2)[tc.asset]
			require.Equal(t, tc.want, it.State)
			require.NotEqual(t, ledger.ItemSucceeded, it.State)
			if tc.asset == "a05" {
				require.Equal(t, "live-worker", it.Owner)
				require.Equal(t, 1, it.Attempt)
			} else {
				require.Equal(t, "flaky", it.Error)
			}
		})
	}
}

// A claim that lands between the copier's read and its cancel is
// cancelled (Cancel's condition allows RUNNING), and reported.
func TestReplayItemForceReportsCancelRace(t *testing.T) {
	t.Parallel()
	rb := setupReplay(t)
	rb.hooks.afterGetFunc = func(key ledger.ItemKey, err error) {
		if key.Asset != "a05" {
			return
		}
		require.ErrorIs(t, err, ledger.ErrNotFound)
		now := rb.clock.Now()
		_, err = rb.b.Ledger.Claim(t.Context(), ledger.ClaimParams{Key: key, Owner: "live-worker", LeaseUntil: now.Add(time.Minute), Fence: 99, Now: now})
		require.NoError(t, err)
	}
	_, err := rb.e.ReplayItem(t.Context(), rb.run, "a00", true)
	require.ErrorIs(t, err, ledger.ErrConflict)
	require.ErrorContains(t, err, `claimed by "live-worker" (attempt 1)`)
}
