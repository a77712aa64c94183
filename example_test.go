package baton_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
)

// noop is a processor that does nothing.
var noop = baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })

// A job is plain data and a processor; a catalog validates its jobs and
// fills the limits left zero.
func ExampleNewCatalog() {
	catalog, err := baton.NewCatalog(baton.Job{
		Name:      "quotes",
		Schedule:  "rate(5 minutes)",
		Assets:    []string{"AAPL", "MSFT"},
		Derived:   []baton.Derived{{Name: "INDEX", Inputs: []string{"AAPL", "MSFT"}}},
		Limits:    baton.Limits{MaxAttempts: 3},
		Processor: noop,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	j, _ := catalog.Lookup("quotes")
	fmt.Println(catalog.Names(), j.Assets, j.HasItem("INDEX"))
	fmt.Println(j.Limits.MaxAttempts, j.Limits.ItemLease)

	_, err = catalog.Lookup("bonds")
	fmt.Println(errors.Is(err, baton.ErrUnknownJob), err)
	// Output:
	// [quotes] [AAPL MSFT] true
	// 3 30s
	// true unknown job "bonds" (known: quotes)
}

// A catalog refuses a job that is wrong, naming it and what is wrong.
func ExampleNewCatalog_invalid() {
	_, err := baton.NewCatalog(baton.Job{Name: "quotes", Schedule: "rate(5 minutes)", Assets: []string{"AAPL", "AAPL"}, Processor: noop})
	fmt.Println(err)
	_, err = baton.NewCatalog(baton.Job{Name: "quotes", Schedule: "every 5 minutes", Assets: []string{"AAPL"}, Processor: noop})
	fmt.Println(err != nil)
	// Output:
	// catalog: job quotes: asset AAPL listed twice
	// true
}

// A processor writes its side effects through Task.Effects: a write of
// an older attempt, after a newer one, is refused as stale, so a worker
// whose claim expired cannot overwrite the newer worker's value.
func ExampleProcessorFunc() {
	p := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		value := fmt.Appendf(nil, "%s written by attempt %d", t.Asset, t.Attempt)
		if err := t.Effects.Put(ctx, "greeting/"+t.Asset, value); err != nil {
			return nil, err
		}
		return value, nil
	})
	effects := batontest.NewEffects()
	tick := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()

	newer := effects.NewTask(batontest.TaskParams{Job: "hello", Asset: "world", Nominal: tick, Attempt: 2})
	out, err := p.Process(ctx, newer)
	fmt.Println(string(out), err)
	stale := effects.NewTask(batontest.TaskParams{Job: "hello", Asset: "world", Nominal: tick, Attempt: 1})
	_, err = p.Process(ctx, stale)
	fmt.Println(errors.Is(err, baton.ErrStale))
	stored, _ := effects.Get(ctx, "hello", "greeting/world")
	fmt.Println(string(stored.Value))
	// Output:
	// world written by attempt 2 <nil>
	// true
	// world written by attempt 2
}

// Permanent marks an error no retry can fix: the item goes straight to
// DEAD.
func ExamplePermanent() {
	err := baton.Permanent(errors.New("unknown ticker"))
	fmt.Println(baton.IsPermanent(err), baton.IsPermanent(fmt.Errorf("fetch: %w", err)), baton.IsPermanent(errors.New("timeout")))
	// Output: true true false
}

// Run ids and item keys have one text form, the same in the ledger, the
// queue, the logs and the CLI.
func ExampleParseItemKey() {
	k, err := baton.ParseItemKey("fx@2026-11-21T12:01:00Z#2/EURUSD")
	fmt.Println(k.Run.Job, k.Run.Nominal.Format(time.Kitchen), k.Run.Generation, k.Asset, err)
	fmt.Println(k.Run, k)
	// Output:
	// fx 12:01PM 2 EURUSD <nil>
	// fx@2026-11-21T12:01:00Z#2 fx@2026-11-21T12:01:00Z#2/EURUSD
}

// Derived items may take derived items as inputs: a graph of any depth,
// listed in any order. Fan-in runs each once its inputs succeeded, with
// their results; an input that ends DEAD or CANCELLED cancels everything
// downstream of it. A cycle is refused, and named.
func ExampleDerived() {
	report := baton.Job{
		Name: "report", Schedule: "cron(0 6 * * ? *)", Assets: []string{"sales", "costs", "fx"},
		Derived: []baton.Derived{
			{Name: "pdf", Inputs: []string{"margin_usd"}, Lease: 5 * time.Minute}, // slower: its own lease
			{Name: "margin_usd", Inputs: []string{"margin", "fx"}},
			{Name: "margin", Inputs: []string{"sales", "costs"}},
		},
		Processor: noop,
	}
	fmt.Println(report.Validate())

	report.Derived[2].Inputs = []string{"sales", "pdf"}
	fmt.Println(report.Validate())
	// Output:
	// <nil>
	// job report: derived "pdf" → "margin" → "margin_usd" → "pdf" forms a cycle
}

// A processor that runs longer than its item's lease renews its claim
// with Heartbeat; once the item is cancelled (or another attempt took it
// over) Heartbeat fails and the processor stops. batontest.Claim stands in
// for the runtime's claim in a test.
func ExampleTask_Heartbeat() {
	render := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		pages := 0
		for range 10 {
			pages++ // render a page: each takes a while
			if err := t.Heartbeat(ctx); err != nil {
				return nil, fmt.Errorf("after %d pages: %w", pages, err)
			}
		}
		return fmt.Appendf(nil, "%d pages", pages), nil
	})
	effects := batontest.NewEffects()
	tick := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

	claim := batontest.NewClaim(time.Minute, nil)
	out, err := render.Process(context.Background(), effects.NewTask(batontest.TaskParams{Job: "report", Asset: "pdf", Nominal: tick, Claim: claim}))
	fmt.Println(string(out), err, claim.Heartbeats())

	claim = batontest.NewClaim(time.Minute, nil)
	claim.Cancel("cancelled by ops")
	_, err = render.Process(context.Background(), effects.NewTask(batontest.TaskParams{Job: "report", Asset: "pdf", Nominal: tick, Claim: claim}))
	fmt.Println(errors.Is(err, baton.ErrCancelled), err)
	// Output:
	// 10 pages <nil> 10
	// true after 1 pages: item cancelled (cancelled by ops)
}
