package ledgertest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// TestPutPage checks that a page of a run's item list is written once,
// read back whole (names, payloads, Final, Resume, At), and kept apart
// from other pages, generations and runs; and that a page CheckPage
// refuses is refused and writes nothing.
func TestPutPage(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("WrittenOnceAndReadBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		now := at(2 * time.Second)
		p := ledger.PutPageParams{Run: b.runID(1), Index: 3, Final: true, Resume: "cursor-7", Parent: "up@2026-11-21T12:00:00Z#2", Now: now, Items: []ledger.PageItem{
			{Name: "a-001", Payload: []byte(`{"n":1}`)},
			{Name: "a-002"},
			{Name: "b", Payload: []byte{0, 1, 2, 255}},
		}}
		pg, err := b.store.PutPage(b.ctx, p)
		require.NoError(t, err)
		want := ledger.Page{Run: b.runID(1), Index: 3, Items: p.Items, Final: true, Resume: "cursor-7", Parent: "up@2026-11-21T12:00:00Z#2", At: now}
		require.Equal(t, want, pg)

		got, err := b.store.GetPage(b.ctx, b.runID(1), 3)
		require.NoError(t, err)
		require.Equal(t, want, got)

		again := p
		again.Items, again.Final, again.Resume, again.Parent, again.Now = []ledger.PageItem{{Name: "z"}}, false, "", "", at(time.Minute)
		pg, err = b.store.PutPage(b.ctx, again)
		require.ErrorIs(t, err, ledger.ErrTerminal)
		require.Equal(t, want, pg, "the page as first written")
		got, err = b.store.GetPage(b.ctx, b.runID(1), 3)
		require.NoError(t, err)
		require.Equal(t, want, got, "nothing overwritten")
	})

	t.Run("PagesRunsAndGenerationsAreSeparate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		other := ledger.RunID{Job: b.job, Nominal: nominal.Add(time.Minute), Generation: 1}
		for i, p := range []ledger.PutPageParams{
			{Run: b.runID(1), Index: 0},
			{Run: b.runID(1), Index: 1},
			{Run: b.runID(2), Index: 0},
			{Run: other, Index: 0},
		} {
			p.Items, p.Now = []ledger.PageItem{{Name: fmt.Sprintf("item-%d", i)}}, at(time.Second)
			_, err := b.store.PutPage(b.ctx, p)
			require.NoError(t, err, "%+v", p)
		}
		for i, k := range []struct {
			run   ledger.RunID
			index int
		}{{b.runID(1), 0}, {b.runID(1), 1}, {b.runID(2), 0}, {other, 0}} {
			pg, err := b.store.GetPage(b.ctx, k.run, k.index)
			require.NoError(t, err)
			require.Equal(t, []ledger.PageItem{{Name: fmt.Sprintf("item-%d", i)}}, pg.Items, "page %d of %s", k.index, k.run)
		}
		_, err := b.store.GetPage(b.ctx, b.runID(1), 2)
		require.ErrorIs(t, err, ledger.ErrNotFound)
		_, err = b.store.GetPage(b.ctx, b.runID(3), 0)
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})

	t.Run("EmptyFinalPage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, err := b.store.PutPage(b.ctx, ledger.PutPageParams{Run: b.runID(1), Index: 0, Final: true, Now: at(0)})
		require.NoError(t, err)
		pg, err := b.store.GetPage(b.ctx, b.runID(1), 0)
		require.NoError(t, err)
		require.Empty(t, pg.Items)
		require.True(t, pg.Final)
	})

	t.Run("LargestPage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		// 64 items of 64-byte names whose payloads fill the page to
		// MaxPageBytes: what no backend may cut or refuse.
		items := make([]ledger.PageItem, ledger.PageItems)
		per := (ledger.MaxPageBytes - 1) / ledger.PageItems // bytes per item
		for i := range items {
			items[i].Name = fmt.Sprintf("%064d", i)
			// name length (1) + name (64) + payload length (2) + payload
			items[i].Payload = bytes.Repeat([]byte{byte(i)}, per-1-64-2)
		}
		p := ledger.PutPageParams{Run: b.runID(1), Index: 0, Items: items, Now: at(0)}
		require.NoError(t, ledger.CheckPage(p))
		_, err := b.store.PutPage(b.ctx, p)
		require.NoError(t, err)
		pg, err := b.store.GetPage(b.ctx, b.runID(1), 0)
		require.NoError(t, err)
		require.Equal(t, items, pg.Items)
	})

	t.Run("BadPageRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		for name, p := range map[string]ledger.PutPageParams{
			"negative index": {Run: b.runID(1), Index: -1, Items: []ledger.PageItem{{Name: "a"}}},
			"no items":       {Run: b.runID(1), Index: 1, Items: nil},
			"out of order":   {Run: b.runID(1), Index: 2, Items: []ledger.PageItem{{Name: "b"}, {Name: "a"}}},
			"duplicate":      {Run: b.runID(1), Index: 3, Items: []ledger.PageItem{{Name: "a"}, {Name: "a"}}},
			"payload":        {Run: b.runID(1), Index: 4, Items: []ledger.PageItem{{Name: "a", Payload: make([]byte, ledger.MaxPayload+1)}}},
			"too many":       {Run: b.runID(1), Index: 5, Items: manyItems(ledger.PageItems + 1)},
		} {
			p.Now = at(0)
			_, err := b.store.PutPage(b.ctx, p)
			require.ErrorIs(t, err, ledger.ErrBadPage, name)
			if p.Index >= 0 {
				_, err = b.store.GetPage(b.ctx, p.Run, p.Index)
				require.ErrorIs(t, err, ledger.ErrNotFound, "%s: nothing written", name)
			}
		}
	})
}

func manyItems(n int) []ledger.PageItem {
	items := make([]ledger.PageItem, n)
	for i := range items {
		items[i].Name = fmt.Sprintf("item-%05d", i)
	}
	return items
}

// TestPagePartitions checks a run opened with Pages (its items are its
// stored pages) and a large Shards: the items of one page are exactly one
// ListItemRange of the page's names, every item is found by its key
// (claim, complete, get, list) wherever the store keeps it, a name on no
// page is not found, and resuming or superseding the generation keeps
// where its items are. A store that partitions it (Partitions above 1)
// must keep Pages, and then a range read from a page's first name
// returns that page's partition only: no item of the next pages.
func TestPagePartitions(t *testing.T, h Harness) {
	t.Parallel()
	b := setup(t, h)
	const shards = 1000 // 64,000 expected items: any partitioning store spreads them
	r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 1, Shards: shards, Pages: true, Now: at(time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)
	parted := r.Partitions > 1
	if parted {
		require.True(t, r.Pages, "a run opened with Pages and partitioned keeps Pages")
	}
	// Five pages of three items, names ascending from page to page.
	var pages [][]string
	for p := range 5 {
		var names []string
		var items []ledger.PageItem
		for i := range 3 {
			n := fmt.Sprintf("n%d-%d", p, i)
			names = append(names, n)
			items = append(items, ledger.PageItem{Name: n})
		}
		pages = append(pages, names)
		_, err := b.store.PutPage(b.ctx, ledger.PutPageParams{Run: b.runID(1), Index: p, Items: items, Final: p == 4, Now: at(time.Second)})
		require.NoError(t, err)
	}
	r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 1, Shards: 1, Now: at(2 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, out)
	if parted {
		require.True(t, r.Pages, "resuming keeps Pages")
		require.Equal(t, b.getRun(t).Partitions, r.Partitions)
	}
	var all []string
	for _, names := range pages {
		for _, n := range names {
			all = append(all, n)
			it := b.claim(t, b.key(n), "a", at(3*time.Second))
			if n != "n2-1" {
				_, err := b.store.Complete(b.ctx, ledger.CompleteParams{Key: b.key(n), Owner: "a", Attempt: it.Attempt, Now: at(4 * time.Second)})
				require.NoError(t, err, n)
			}
		}
	}
	for p, names := range pages {
		items, err := b.store.ListItemRange(b.ctx, b.runID(1), names[0], names[len(names)-1])
		require.NoError(t, err)
		require.Equal(t, names, assetsOf(items), "page %d is one range", p)
		for _, it := range items {
			want := ledger.ItemSucceeded
			if it.Key.Asset == "n2-1" {
				want = ledger.ItemRunning
			}
			require.Equal(t, want, it.State, it.Key.Asset)
		}
		if parted {
			items, err := b.store.ListItemRange(b.ctx, b.runID(1), names[0], "z")
			require.NoError(t, err)
			require.Equal(t, names, assetsOf(items), "page %d's partition holds no item of the next pages", p)
		}
	}
	every, err := b.store.ListItems(b.ctx, b.runID(1))
	require.NoError(t, err)
	require.Equal(t, all, assetsOf(every), "every page, in asset order")
	_, err = b.store.GetItem(b.ctx, b.key("n2-9"))
	require.ErrorIs(t, err, ledger.ErrNotFound, "a name on no page")

	// Superseded by a generation of one place, the first generation's
	// items are still found by their keys.
	_, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 2, Shards: 1, Force: true, Now: at(5 * time.Second)})
	require.NoError(t, err)
	for _, n := range all {
		it, err := b.store.GetItem(b.ctx, b.key(n))
		require.NoError(t, err, n)
		require.Equal(t, n == "n2-1", it.State == ledger.ItemRunning, n)
	}
}

// assetsOf returns the asset names of items, in their order.
func assetsOf(items []ledger.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Key.Asset)
	}
	return out
}
