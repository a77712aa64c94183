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
