package baton_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/batonhq/baton"
)

// An items function reads a run's items when it opens, a page at a time,
// in ascending name order (keyset pagination): here from a table of
// assets to ingest, with each row's URL as the item's payload.
func ExampleItemsFunc() {
	table := map[string]string{ // name → URL, as a database would hold them
		"cam-0001": "s3://ingest/0001.mp4",
		"cam-0002": "s3://ingest/0002.mp4",
		"cam-0003": "s3://ingest/0003.mp4",
	}
	items := func(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		// SELECT name, url FROM assets WHERE name > $cursor ORDER BY name LIMIT 2
		var names []string
		for n := range table {
			if n > req.Cursor {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		var page baton.ItemsPage
		for _, n := range names[:min(2, len(names))] {
			page.Items = append(page.Items, baton.Item{Name: n, Payload: []byte(table[n])})
		}
		if len(names) > 2 {
			page.Next = page.Items[len(page.Items)-1].Name
		}
		return page, nil
	}
	_, err := baton.NewCatalog(baton.Job{Name: "ingest", Schedule: "rate(1 minute)", Items: items, Processor: noop})
	fmt.Println("valid:", err == nil)

	// What the coordinator does when a run opens: page by page until Next is "".
	for req := (baton.ItemsRequest{}); ; {
		page, _ := items(context.Background(), req)
		for _, it := range page.Items {
			fmt.Println(it.Name, string(it.Payload))
		}
		if page.Next == "" {
			break
		}
		req.Cursor = page.Next
	}
	// Output:
	// valid: true
	// cam-0001 s3://ingest/0001.mp4
	// cam-0002 s3://ingest/0002.mp4
	// cam-0003 s3://ingest/0003.mp4
}

// A job's items are constant (Assets) or computed when its run opens
// (Items), not both.
func ExampleJob_items() {
	_, err := baton.NewCatalog(baton.Job{
		Name: "ingest", Schedule: "rate(1 minute)", Assets: []string{"a"},
		Items: baton.ItemList(100, baton.Item{Name: "b"}), Processor: noop,
	})
	fmt.Println(err)
	// Output:
	// catalog: job ingest: both Assets and Items: a job's items are constant (Assets) or computed when its run opens (Items), not both
}

// A run-time list of about a million items declares its expected size,
// from which its run's item partitions are fixed when it opens (the
// list's final size is not known yet); a size out of range, or one on a
// job with constant Assets, is refused by name.
func ExampleJob_expectedItems() {
	items := func(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		return baton.ItemsPage{}, nil // SELECT name FROM assets WHERE name > $cursor …
	}
	_, err := baton.NewCatalog(baton.Job{Name: "ingest", Schedule: "rate(1 hour)", Items: items,
		ExpectedItems: 1_000_000, Processor: noop})
	fmt.Println("valid:", err == nil)
	_, err = baton.NewCatalog(baton.Job{Name: "ingest", Schedule: "rate(1 hour)", Items: items,
		ExpectedItems: -1, Processor: noop})
	fmt.Println(err)
	_, err = baton.NewCatalog(baton.Job{Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD"},
		ExpectedItems: 10, Processor: noop})
	fmt.Println(err)
	// Output:
	// valid: true
	// catalog: job ingest: ExpectedItems -1: must be between 0 and 100000000
	// catalog: job fx: ExpectedItems without Items: a job with constant Assets has their number of items
}

// A processor reads its item's payload from the task.
func ExampleTask_payload() {
	p := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		return []byte("fetched " + string(t.Payload)), nil
	})
	out, _ := p.Process(context.Background(), baton.Task{Asset: "cam-0001", Payload: []byte("s3://ingest/0001.mp4")})
	fmt.Println(string(out))
	// Output:
	// fetched s3://ingest/0001.mp4
}
