package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
)

// A job of many short items runs in bulk: its consumers run each shard
// message's items in place (up to Limits.Concurrency at once), each item
// still claimed, processed and completed on its own, instead of sending
// one queue message per item. A run-time list runs in bulk too, a stored
// page (up to 64 items) per shard message.
func ExampleJob_bulk() {
	sensors := make([]string, 5000)
	for i := range sensors {
		sensors[i] = fmt.Sprintf("sensor-%04d", i)
	}
	_, err := baton.NewCatalog(baton.Job{
		Name: "poll", Schedule: "rate(5 minutes)", Assets: sensors, Bulk: true,
		Limits:    baton.Limits{Concurrency: 32},
		Processor: noop,
	})
	fmt.Println("valid:", err == nil)

	items := func(context.Context, baton.ItemsRequest) (baton.ItemsPage, error) { return baton.ItemsPage{}, nil }
	_, err = baton.NewCatalog(baton.Job{Name: "ingest", Schedule: "rate(5 minutes)", Items: items, ExpectedItems: 100_000, Bulk: true, Processor: noop})
	fmt.Println("valid:", err == nil)
	// Output:
	// valid: true
	// valid: true
}
