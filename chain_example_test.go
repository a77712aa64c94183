package baton_test

import (
	"fmt"

	"github.com/batonhq/baton"
)

// When a run of "ingest" finishes complete, a run of "report" starts,
// once per ingest run; its tasks carry the ingest run's id in
// Task.Parent. report has no Schedule: only the chain starts it. Chains
// that form a cycle are refused, named.
func ExampleChain() {
	_, err := baton.NewCatalog(
		baton.Job{Name: "ingest", Schedule: "rate(1 hour)", Assets: []string{"a", "b"}, Processor: noop,
			Chains: []baton.Chain{{Job: "report"}}},
		baton.Job{Name: "report", Assets: []string{"summary"}, Processor: noop},
	)
	fmt.Println("valid:", err == nil)

	parent, _ := baton.ParseRunID("ingest@2026-11-21T12:00:00Z#1")
	fmt.Println("report's run:", baton.RunID{Job: "report", Submission: baton.ChainKey(parent), Generation: 1})

	_, err = baton.NewCatalog(
		baton.Job{Name: "a", Schedule: "rate(1 hour)", Assets: []string{"x"}, Processor: noop, Chains: []baton.Chain{{Job: "b"}}},
		baton.Job{Name: "b", Schedule: "rate(1 hour)", Assets: []string{"x"}, Processor: noop, Chains: []baton.Chain{{Job: "a"}}},
	)
	fmt.Println(err)
	_, err = baton.NewCatalog(baton.Job{Name: "a", Schedule: "rate(1 hour)", Assets: []string{"x"}, Processor: noop, Chains: []baton.Chain{{Job: "nope"}}})
	fmt.Println(err)
	// Output:
	// valid: true
	// report's run: report+after-e9dd4b3cd17a34e2bcee4471#1
	// catalog: chains "a" → "b" → "a" form a cycle
	// catalog: job a: chain to unknown job "nope"
}
