package ledgertest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// TestShards: a generation's shard count is the opener's, kept by resumes
// and by every later write to the run, and a forced generation takes its
// own opener's.
func TestShards(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("OpenerSetsResumeKeeps", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 2, Shards: 5, Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		require.Equal(t, 5, r.Shards)
		require.Equal(t, 5, b.getRun(t).Shards)

		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 3, Shards: 9, Now: at(2 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Equal(t, 5, r.Shards, "a resume keeps the generation's shard count")

		r = b.advance(t, 1, 3, 4, true, at(3*time.Second))
		require.Equal(t, 5, r.Shards, "fanned out")
		r = b.finish(t, 1, 4, 0, 0, at(4*time.Second))
		require.Equal(t, 5, r.Shards, "finished")
		require.Equal(t, 5, b.getRun(t).Shards)

		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 4, Shards: 7, Now: at(5 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.AlreadyFannedOut, out)
		require.Equal(t, 5, r.Shards)

		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 5, Shards: 3, Force: true, Now: at(6 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		require.Equal(t, 3, r.Shards, "a forced generation is the opener's")
		require.Equal(t, 3, b.getRun(t).Shards)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, 3, runs[0].Shards, "listed")
	})

	t.Run("BelowOneIsOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		r, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 1, Shards: -2, Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, 1, r.Shards)
		require.Equal(t, 1, b.getRun(t).Shards)
	})
}

// TestListItemRange: ListItemRange returns one generation's items between
// two asset names, both included, ordered by asset.
func TestListItemRange(t *testing.T, h Harness) {
	t.Parallel()
	b := setup(t, h)
	for _, asset := range []string{"USDJPY", "EURUSD", "USDCHF", "DXY", "GBPUSD", "EURUSD.x", "EUR"} {
		b.claim(t, b.key(asset), "a", at(time.Second))
	}
	b.itemIn(t, ledger.ItemKey{Run: b.runID(2), Asset: "EURUSD"}, ledger.ItemSucceeded)
	other := ledger.RunID{Job: uniqueJob(), Nominal: nominal, Generation: 1}
	b.claim(t, ledger.ItemKey{Run: other, Asset: "FFF"}, "a", at(time.Second))

	assets := func(first, last string) []string {
		t.Helper()
		items, err := b.store.ListItemRange(b.ctx, b.runID(1), first, last)
		require.NoError(t, err)
		out := []string{}
		for _, it := range items {
			require.Equal(t, b.runID(1), itemView(it).Key.Run)
			requireItem(t, b.getItem(t, it.Key), it, "listed records are the stored ones")
			out = append(out, it.Key.Asset)
		}
		return out
	}
	require.Equal(t, []string{"EUR", "EURUSD", "EURUSD.x", "GBPUSD"}, assets("EUR", "GBPUSD"), "both ends included")
	require.Equal(t, []string{"EURUSD", "EURUSD.x"}, assets("EURUSD", "EURUSD.x"))
	require.Equal(t, []string{"EURUSD"}, assets("EURUSD", "EURUSD"))
	require.Equal(t, []string{"GBPUSD", "USDCHF"}, assets("F", "USDCHF"), "bounds need not be items")
	require.Equal(t, []string{"DXY", "EUR", "EURUSD", "EURUSD.x", "GBPUSD", "USDCHF", "USDJPY"}, assets("A", "Z"))
	require.Equal(t, []string{}, assets("V", "Z"))
	require.Equal(t, []string{}, assets("USDJPY", "EUR"), "first after last")

	items, err := b.store.ListItemRange(b.ctx, b.runID(2), "A", "Z")
	require.NoError(t, err)
	require.Len(t, items, 1, "one generation only")
	require.Equal(t, ledger.ItemSucceeded, items[0].State)
	require.Equal(t, []byte("ok"), items[0].Result)
}

// TestMarkDone: a settle mark is written once, per run, level and index.
func TestMarkDone(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("WrittenOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		now := at(1500 * time.Millisecond)
		p := ledger.MarkParams{Run: b.runID(1), Level: 0, Index: 70, Succeeded: 60, Dead: 3, Cancelled: 1, Now: now}
		m, err := b.store.MarkDone(b.ctx, p)
		require.NoError(t, err)
		want := ledger.Mark{Run: b.runID(1), Level: 0, Index: 70, Succeeded: 60, Dead: 3, Cancelled: 1, At: now}
		requireMark(t, want, m)

		again := p
		again.Succeeded, again.Dead, again.Now = 64, 0, at(time.Minute)
		m, err = b.store.MarkDone(b.ctx, again)
		require.ErrorIs(t, err, ledger.ErrTerminal)
		requireMark(t, want, m, "the mark as first written")
		marks, err := b.store.ListMarks(b.ctx, b.runID(1), 0, 1)
		require.NoError(t, err)
		require.Len(t, marks, 1)
		requireMark(t, want, marks[0], "nothing overwritten")
	})

	t.Run("RunLevelAndIndexAreSeparate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		now := at(time.Second)
		for _, p := range []ledger.MarkParams{
			{Run: b.runID(1), Level: 0, Index: 0, Succeeded: 1},
			{Run: b.runID(1), Level: 1, Index: 0, Succeeded: 2},
			{Run: b.runID(1), Level: 0, Index: 1, Succeeded: 3},
			{Run: b.runID(2), Level: 0, Index: 0, Succeeded: 4},
			{Run: ledger.RunID{Job: b.job, Nominal: nominal.Add(time.Minute), Generation: 1}, Level: 0, Index: 0, Succeeded: 5},
		} {
			p.Now = now
			m, err := b.store.MarkDone(b.ctx, p)
			require.NoError(t, err, "%+v", p)
			require.Equal(t, p.Succeeded, m.Succeeded)
		}
	})

	t.Run("NegativeRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		for name, p := range map[string]ledger.MarkParams{
			"level":     {Run: b.runID(1), Level: -1},
			"index":     {Run: b.runID(1), Index: -1},
			"succeeded": {Run: b.runID(1), Succeeded: -1},
			"dead":      {Run: b.runID(1), Dead: -1},
			"cancelled": {Run: b.runID(1), Cancelled: -1},
		} {
			p.Now = at(time.Second)
			_, err := b.store.MarkDone(b.ctx, p)
			require.Error(t, err, name)
			require.Contains(t, err.Error(), name, "the error names what is wrong")
		}
		marks, err := b.store.ListMarks(b.ctx, b.runID(1), 0, 0)
		require.NoError(t, err)
		require.Empty(t, marks, "nothing written")
	})

	t.Run("ConcurrentOneWins", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = b.store.MarkDone(b.ctx, ledger.MarkParams{Run: b.runID(1), Level: 0, Index: 3, Succeeded: i, Now: at(time.Second)})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.ErrorIs(t, err, ledger.ErrTerminal)
		}
		require.Equal(t, 1, won, "exactly one write creates the mark")
	})
}

// TestListMarks: ListMarks reads one group of one level, ordered by index.
func TestListMarks(t *testing.T, h Harness) {
	t.Parallel()
	b := setup(t, h)
	now := at(time.Second)
	g := ledger.MarkGroup
	for _, p := range []ledger.MarkParams{
		{Level: 0, Index: g + 5}, {Level: 0, Index: g}, {Level: 0, Index: 2*g - 1},
		{Level: 0, Index: g - 1}, {Level: 0, Index: 2 * g}, {Level: 1, Index: g + 1},
	} {
		p.Run, p.Now, p.Dead = b.runID(1), now, p.Index
		_, err := b.store.MarkDone(b.ctx, p)
		require.NoError(t, err)
	}
	_, err := b.store.MarkDone(b.ctx, ledger.MarkParams{Run: b.runID(2), Level: 0, Index: g + 2, Now: now})
	require.NoError(t, err)

	indexes := func(level, group int) []int {
		t.Helper()
		marks, err := b.store.ListMarks(b.ctx, b.runID(1), level, group)
		require.NoError(t, err)
		out := []int{}
		for _, m := range marks {
			require.Equal(t, b.runID(1), markView(m).Run)
			require.Equal(t, level, m.Level)
			require.Equal(t, m.Index, m.Dead, "the mark's own counts")
			require.Equal(t, now, m.At.UTC())
			out = append(out, m.Index)
		}
		return out
	}
	require.Equal(t, []int{g, g + 5, 2*g - 1}, indexes(0, 1))
	require.Equal(t, []int{g - 1}, indexes(0, 0))
	require.Equal(t, []int{2 * g}, indexes(0, 2))
	require.Equal(t, []int{g + 1}, indexes(1, 1))
	require.Equal(t, []int{}, indexes(1, 0))
	require.Equal(t, []int{}, indexes(2, 1))
}

// requireMark requires got to be want.
func requireMark(t require.TestingT, want, got ledger.Mark, msgAndArgs ...any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Equal(t, markView(want), markView(got), msgAndArgs...)
}

// markView is runView for marks: times in UTC.
func markView(m ledger.Mark) ledger.Mark {
	m.Run.Nominal = utc(m.Run.Nominal)
	m.At = utc(m.At)
	return m
}

// TestItemPartitions: a store that spreads a large run's items over
// partitions (Run.Partitions above 1) keeps the count for the generation,
// lists the run whole in asset order, and lists a range of first's
// partition only. A store that keeps every item in one place skips it.
func TestItemPartitions(t *testing.T, h Harness) {
	t.Parallel()
	b := setup(t, h)
	const shards = 1000 // 64,000 items: any partitioning store spreads them
	r, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 1, Shards: shards, Now: at(time.Second)})
	require.NoError(t, err)
	if r.Partitions < 2 {
		t.Skip("the store keeps a run's items in one place (Run.Partitions ≤ 1)")
	}
	parts := r.Partitions
	require.Equal(t, parts, b.getRun(t).Partitions, "stored with the run")
	r = b.advance(t, 1, 1, 3, true, at(2*time.Second))
	require.Equal(t, parts, r.Partitions, "kept by later writes")

	names := []string{"A0", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "B0", "B1", "B2", "B3", "B4", "B5"}
	for _, n := range names {
		b.claim(t, b.key(n), "a", at(3*time.Second))
	}
	all, err := b.store.ListItems(b.ctx, b.runID(1))
	require.NoError(t, err)
	var got []string
	for _, it := range all {
		got = append(got, it.Key.Asset)
	}
	require.Equal(t, names, got, "every partition, in asset order")

	for _, first := range []string{"A0", "A5", "B2"} {
		p := ledger.ItemPartition(first, parts)
		want := []string{}
		for _, n := range names {
			if n >= first && ledger.ItemPartition(n, parts) == p {
				want = append(want, n)
			}
		}
		items, err := b.store.ListItemRange(b.ctx, b.runID(1), first, "Z")
		require.NoError(t, err)
		got := []string{}
		for _, it := range items {
			got = append(got, it.Key.Asset)
		}
		require.Equal(t, want, got, "the range of %s's partition %d", first, p)
	}

	// A forced generation of a small run is one partition; the items of
	// the generation it superseded are still found by their keys.
	r, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 2, Shards: 1, Force: true, Now: at(4 * time.Second)})
	require.NoError(t, err)
	require.LessOrEqual(t, r.Partitions, 1)
	for _, n := range names {
		it, err := b.store.GetItem(b.ctx, b.key(n))
		require.NoError(t, err, n)
		require.Equal(t, ledger.ItemRunning, it.State, n)
	}
}
