package baton

import (
	"context"
	"fmt"
	"strconv"
)

// MaxPayload is the largest payload an item carries: 200 KiB.
const MaxPayload = 200 << 10

// Item is one item of a run-time list: a name and an optional payload.
type Item struct {
	Name    string
	Payload []byte
}

// ItemsRequest asks an ItemsFunc for one page of a run's items.
type ItemsRequest struct {
	Run    RunID  // the run being opened
	Cursor string // "" for the first page, else the Next of the page before
	Parent RunID  // the run whose finish started this one through a Chain, if any
}

// ItemsPage is one page of a run's items.
type ItemsPage struct {
	Items []Item // in ascending order of name, each above the pages before (ORDER BY name)
	Next  string // the next page's cursor (at most 1024 bytes); "" ends the list
}

// ItemsFunc computes a run's items when it opens, a page per call, until
// Next is "": the same items for the same cursor while the run opens.
type ItemsFunc func(ctx context.Context, req ItemsRequest) (ItemsPage, error)

// ItemList returns an ItemsFunc serving items in pages of pageSize.
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
