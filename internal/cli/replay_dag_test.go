package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/ledger"
)

// An item replay in a graph of derived items is over once the replayed
// item and everything downstream of it that can proceed are terminal, at
// every level; an item waiting on an input outside the replay (and the
// items below it) is not the replay's business.
func TestItemReplayDoneInAGraph(t *testing.T) {
	t.Parallel()
	j := baton.Job{Name: "dag", Schedule: "rate(1 minute)", Assets: []string{"a1", "a2", "a3"}, Derived: jobmodeltest.Derived,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	require.NoError(t, j.Validate())
	items := func(states map[string]ledger.ItemState) map[string]ledger.Item {
		out := map[string]ledger.Item{}
		for a, s := range states {
			out[a] = ledger.Item{State: s}
		}
		return out
	}
	const ok, running = ledger.ItemSucceeded, ledger.ItemRunning
	cases := []struct {
		name   string
		states map[string]ledger.ItemState
		done   bool
	}{
		{"asset running", map[string]ledger.ItemState{"a1": running}, false},
		{"second level pending", map[string]ledger.ItemState{"a1": ok, "a2": ok, "a3": ok, "x": ok, "y": ok}, false},
		{"third level running", map[string]ledger.ItemState{"a1": ok, "a2": ok, "a3": ok, "x": ok, "y": ok, "z": ok, "top": running}, false},
		{"all done", map[string]ledger.ItemState{"a1": ok, "a2": ok, "a3": ok, "x": ok, "y": ok, "z": ok, "top": ok}, true},
		// y waits on a3 (outside a1's replay): z and top wait on y.
		{"blocked by an outside input", map[string]ledger.ItemState{"a1": ok, "a2": ok, "x": ok}, true},
		{"x still to run", map[string]ledger.ItemState{"a1": ok, "a2": ok}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.done, itemReplayDone(j, "a1", items(c.states)))
		})
	}
}
