package fanin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
)

func TestInputs(t *testing.T) {
	t.Parallel()
	d := baton.Derived{Name: "X", Inputs: []string{"A", "B", "C"}}
	cases := []struct {
		name   string
		states map[string]ledger.ItemState
		want   fanin.Verdict
		reason string
	}{
		{"none started", map[string]ledger.ItemState{}, fanin.Waiting, ""},
		{"all succeeded", map[string]ledger.ItemState{"A": ledger.ItemSucceeded, "B": ledger.ItemSucceeded, "C": ledger.ItemSucceeded}, fanin.Ready, ""},
		{"one running", map[string]ledger.ItemState{"A": ledger.ItemSucceeded, "B": ledger.ItemRunning, "C": ledger.ItemSucceeded}, fanin.Waiting, ""},
		{"one failed (retrying)", map[string]ledger.ItemState{"A": ledger.ItemFailed, "B": ledger.ItemSucceeded, "C": ledger.ItemSucceeded}, fanin.Waiting, ""},
		{"one absent", map[string]ledger.ItemState{"A": ledger.ItemSucceeded, "B": ledger.ItemSucceeded}, fanin.Waiting, ""},
		{"one dead", map[string]ledger.ItemState{"A": ledger.ItemSucceeded, "B": ledger.ItemDead}, fanin.Doomed, "input B is DEAD"},
		{"one cancelled, others running", map[string]ledger.ItemState{"A": ledger.ItemRunning, "C": ledger.ItemCancelled}, fanin.Doomed, "input C is CANCELLED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, reason := fanin.Inputs(d, c.states)
			require.Equal(t, c.want, got)
			require.Equal(t, c.reason, reason)
		})
	}
}
