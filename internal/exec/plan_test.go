package exec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// A forced item replay in a graph of derived items re-runs everything
// downstream of the item, at every level, and carries the rest over.
func TestPlanGenerationInAGraph(t *testing.T) {
	t.Parallel()
	j := baton.Job{Name: "dag", Schedule: "rate(1 minute)", Assets: []string{"a1", "a2", "a3"}, Derived: []baton.Derived{
		{Name: "top", Inputs: []string{"z", "a1"}}, {Name: "z", Inputs: []string{"x", "y"}},
		{Name: "x", Inputs: []string{"a1", "a2"}}, {Name: "y", Inputs: []string{"a3"}},
	},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	require.NoError(t, j.Validate())
	var old []ledger.Item
	for _, n := range jobspec.ItemNames(j) {
		old = append(old, ledger.Item{Key: ledger.ItemKey{Asset: n}, State: ledger.ItemSucceeded})
	}
	p := planGeneration(j, "a3", old)
	require.Equal(t, []string{"a3", "y", "z", "top"}, p.rerun)
	require.Equal(t, []string{"a3"}, p.send, "the derived items wait for fan-in")
	var carried []string
	for _, it := range p.carry {
		carried = append(carried, it.Key.Asset)
	}
	require.Equal(t, []string{"a1", "a2", "x"}, carried)
}
