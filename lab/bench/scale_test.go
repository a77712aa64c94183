package bench

import (
	"context"
	"flag"
	"testing"
)

var (
	scaleRole        = flag.String("scale.role", "", "run one role of a scale run (coordinator or consumer) and print its result; set by the scale scenario")
	scaleStore       = flag.String("scale.store", "", "with -scale.role: the SQLite file")
	scaleItems       = flag.Int("scale.items", 0, "with -scale.role: the run's items")
	scaleConsumers   = flag.Int("scale.consumers", 1, "with -scale.role consumer: batches handled at once")
	scaleExpandFrom  = flag.Int("scale.expand-from", 0, "with -scale.role coordinator: Coordinator.ExpandFrom")
	scaleExpandItems = flag.Int("scale.expand-items", 0, "with -scale.role coordinator: Coordinator.ExpandItems")
	scaleRunTime     = flag.Bool("scale.runtime", false, "with -scale.role: a run-time list job instead of a catalog")
)

// TestScaleRole is a role process of the scale scenario: the bench binary
// run again by startRole, so that each role's peak RSS is its own.
func TestScaleRole(t *testing.T) {
	if *scaleRole == "" {
		t.Skip("a role process of the scale scenario (run by it with -scale.role)")
	}
	res, err := RunScaleRole(context.Background(), ScaleRole{
		Role: *scaleRole, Store: *scaleStore, Items: *scaleItems, Consumers: *scaleConsumers,
		ExpandFrom: *scaleExpandFrom, ExpandItems: *scaleExpandItems, RunTime: *scaleRunTime,
	})
	if err != nil {
		t.Fatal(err)
	}
	PrintScaleResult(res)
}
