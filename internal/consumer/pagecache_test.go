package consumer

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// pagesOnly serves pages of one item each, with a payload of payload
// bytes, and counts its reads.
type pagesOnly struct {
	ledger.Store
	payload int
	reads   int
}

func (p *pagesOnly) GetPage(_ context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	p.reads++
	return ledger.Page{Run: run, Index: index, Items: []ledger.PageItem{{Name: fmt.Sprintf("n%05d", index), Payload: make([]byte, p.payload)}}}, nil
}

// A PageCache holds at most pageCachePages pages and pageCacheBytes bytes,
// whatever the list's size: a page is read once while it is kept, and
// read again once the cache has started afresh.
func TestPageCacheBounded(t *testing.T) {
	t.Parallel()
	run := ledger.RunID{Job: "rt", Generation: 1, Submission: "k"}
	for _, tc := range []struct {
		name    string
		payload int
		pages   int // the most pages kept at once
	}{
		{"by pages", 0, pageCachePages},
		{"by bytes", 1 << 20, pageCacheBytes / (1<<20 + pageItemOverhead + 6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &pagesOnly{payload: tc.payload}
			var pc PageCache
			for i := range 4 * pageCachePages {
				for range 3 { // a page's messages come together
					pg, err := pc.get(t.Context(), l, run, i)
					require.NoError(t, err)
					require.Equal(t, i, pg.Index)
				}
				pc.mu.Lock()
				n, size := len(pc.pages), pc.bytes
				pc.mu.Unlock()
				require.LessOrEqual(t, n, tc.pages)
				require.LessOrEqual(t, size, pageCacheBytes)
			}
			require.Equal(t, 4*pageCachePages, l.reads, "one read per page while it is kept")
			require.EqualValues(t, l.reads, pc.Reads())
			_, err := pc.get(t.Context(), l, run, 0)
			require.NoError(t, err)
			require.Equal(t, 4*pageCachePages+1, l.reads, "the first page was let go")
		})
	}
}
