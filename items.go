package baton

import (
	"context"
	"fmt"
	"strconv"
)

// MaxPayload is the largest payload an item carries: 200 KiB. A payload
// travels inline, stored with the run's item list (never in the queue
// message, which names the item only), so that a resumed fan-out and a
// redelivered message see the same bytes. Larger data belongs in the
// user's own store, with its key as the payload: a reference is the
// processor's to resolve, under its own access rules.
const MaxPayload = 200 << 10

// Item is one item of a run-time list (Job.Items): its name, as
// ValidName defines an asset name, and an optional payload (at most
// MaxPayload bytes) that reaches the processor in Task.Payload.
//
// A payload is user data: baton never writes it to a log or a
// dead-letter reason.
type Item struct {
	Name    string
	Payload []byte
}

// ItemsRequest asks an ItemsFunc for one page of a run's items.
type ItemsRequest struct {
	// Run is the run being opened.
	Run RunID
	// Cursor is "" for the first page, else the Next of the page before.
	Cursor string
	// Parent is the run whose finish started this one through a Chain;
	// the zero RunID otherwise.
	Parent RunID
}

// ItemsPage is one page of a run's items, as an ItemsFunc returns it.
type ItemsPage struct {
	// Items, in strictly ascending byte-wise order of their names, each
	// name above every name of the pages before: keyset pagination, as a
	// database query ORDER BY name gives it. A page may hold any number
	// of items; baton stores them in pages of its own.
	Items []Item
	// Next is the cursor of the next page; "" ends the list. At most
	// 1024 bytes.
	Next string
}

// ItemsFunc computes a run's items when it opens, one page per call:
// from a database, an API, a file. The run's coordinator calls it with
// Cursor "" and then with each page's Next until Next is "". What it
// returns is stored with the run, in pages (so a run may hold 1,000,000
// items and no stored record grows with it), and the run's messages,
// their consumers' membership checks and a resumed fan-out all use the
// stored list: the function is not asked again for a page once stored.
//
// A fan-out stopped part-way (deadline, crash) resumes after the last
// stored item: the function is called again with the cursor that produced
// that item's page, and the items up to it are skipped, so it must return
// the same items for a cursor while the run opens (or at least never new
// ones before them). An error, items out of order, an invalid name or a
// payload over MaxPayload stop the fan-out with an error that names the
// item; the run stays open and the job's next trigger resumes it.
type ItemsFunc func(ctx context.Context, req ItemsRequest) (ItemsPage, error)

// ItemList returns an ItemsFunc that serves items, sorted by name, in
// pages of pageSize (at least 1): for tests, examples and lists known in
// full. The slice is not copied; do not change it afterwards.
func ItemList(pageSize int, items ...Item) ItemsFunc {
	pageSize = max(1, pageSize)
	return func(_ context.Context, req ItemsRequest) (ItemsPage, error) {
		from := 0
		if req.Cursor != "" {
			n, err := strconv.Atoi(req.Cursor)
			if err != nil || n < 0 || n > len(items) {
				return ItemsPage{}, fmt.Errorf("item list: bad cursor %s", quote(req.Cursor))
			}
			from = n
		}
		to := min(from+pageSize, len(items))
		page := ItemsPage{Items: items[from:to]}
		if to < len(items) {
			page.Next = strconv.Itoa(to)
		}
		return page, nil
	}
}
