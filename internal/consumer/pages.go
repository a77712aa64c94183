package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"github.com/batonhq/baton/internal/ledger"
)

// A PageCache keeps at most pageCachePages pages and pageCacheBytes bytes
// of them (each item counted with its name, its payload and
// pageItemOverhead for the Go values that hold them): past either bound
// the cache starts afresh. Its memory is thus bounded whatever the
// list's size (about 8 MiB at most; 512 pages of 64 items with names of
// 20 bytes take about 2.5 MiB), and a list larger than the cache is not
// held whole. A consumer works on a few pages at a time (the messages of
// a page are sent together), so starting afresh costs a read again of
// those few pages. Pages are written once and never change, so a cached
// page is never stale.
const (
	pageCachePages   = 512
	pageCacheBytes   = 8 << 20
	pageItemOverhead = 64
)

// PageCache keeps the stored pages of run-time item lists (ledger.Page)
// that a consumer read to check its messages' items against, so that the
// items of one page cost one read between them, not one each: with
// ledger.PageItems items per page, a consumer that gets a page's messages
// reads it once (1/64 of a read per item). Safe for concurrent use; the
// zero value is empty. Reads counts the pages read from the ledger.
type PageCache struct {
	group singleflight.Group // one read per page at a time, whatever the messages waiting for it
	mu    sync.Mutex
	pages map[string]ledger.Page
	bytes int
	reads atomic.Int64
}

// Reads returns the number of pages the cache read from the ledger.
func (pc *PageCache) Reads() int64 {
	if pc == nil {
		return 0
	}
	return pc.reads.Load()
}

// get returns page index of run, from the cache or read (and cached). A
// nil cache always reads.
func (pc *PageCache) get(ctx context.Context, l ledger.Store, run ledger.RunID, index int) (ledger.Page, error) {
	k := run.String() + "/" + strconv.Itoa(index)
	if pc != nil {
		pc.mu.Lock()
		pg, ok := pc.pages[k]
		pc.mu.Unlock()
		if ok {
			return pg, nil
		}
	} else {
		return l.GetPage(ctx, run, index)
	}
	v, err, _ := pc.group.Do(k, func() (any, error) {
		pc.reads.Add(1)
		return l.GetPage(ctx, run, index)
	})
	if err != nil {
		return ledger.Page{}, err
	}
	pg := v.(ledger.Page)
	size := 0
	for _, it := range pg.Items {
		size += len(it.Name) + len(it.Payload) + pageItemOverhead
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.pages == nil || pc.bytes+size > pageCacheBytes || len(pc.pages) >= pageCachePages {
		pc.pages, pc.bytes = make(map[string]ledger.Page), 0
	}
	pc.pages[k] = pg
	pc.bytes += size
	return pg, nil
}

// member checks the message's item against the stored page its message
// names (a job whose items are computed when its run opens): the page
// must be stored and hold the item. It sets m.page and m.payload. An item
// the stored list does not hold is unvouched: dead-lettered with the
// reason, nothing written.
func (c *Consumer) member(ctx context.Context, m *messageRun) (verdict, bool) {
	d := m.d
	pg, err := c.Pages.get(ctx, c.Ledger, d.key.Run, d.msg.Page)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return c.unvouched(ctx, m, fmt.Errorf("%w: %s: page %d of the run's item list is not stored", ErrUnvouched, d.key, d.msg.Page))
	case err != nil:
		return m.fail(StatusFailed, fmt.Errorf("%s: read page %d: %w", d.key, d.msg.Page, err)), false
	}
	it, ok := pg.Find(d.key.Asset)
	if !ok {
		return c.unvouched(ctx, m, fmt.Errorf("%w: %s: the run's item list holds no item %q on page %d", ErrUnvouched, d.key, d.key.Asset, d.msg.Page))
	}
	m.page, m.payload = &pg, it.Payload
	if pg.Parent != "" {
		parent, err := ledger.ParseRunID(pg.Parent)
		if err != nil {
			return m.fail(StatusFailed, fmt.Errorf("%s: page %d: parent run: %w", d.key, d.msg.Page, err)), false
		}
		m.parent = parent
	}
	return verdict{}, true
}
