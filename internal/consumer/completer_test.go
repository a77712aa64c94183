package consumer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// completerLedger records the completions written one by one and in
// batches; every completion applies.
type completerLedger struct {
	ledger.Store // nil: only Complete and CompleteBatch are called
	mu           sync.Mutex
	single       []string
	batches      [][]string
}

func (l *completerLedger) Complete(_ context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.single = append(l.single, p.Key.Asset)
	return ledger.Item{Key: p.Key, State: ledger.ItemSucceeded}, nil
}

func (l *completerLedger) CompleteBatch(_ context.Context, ps []ledger.CompleteParams) []ledger.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	out := make([]ledger.Outcome, len(ps))
	for i, p := range ps {
		names = append(names, p.Key.Asset)
		out[i].Item = ledger.Item{Key: p.Key, State: ledger.ItemSucceeded}
	}
	l.batches = append(l.batches, names)
	return out
}

func completion(asset string) ledger.CompleteParams {
	return ledger.CompleteParams{Key: ledger.ItemKey{Asset: asset}, Owner: "me", Attempt: 1}
}

// A wave's completions are written in one call once every member has
// submitted or dropped out; a member that drops out (a failure recorded
// alone) does not hold the others.
func TestCompleterWritesTheWaveTogether(t *testing.T) {
	t.Parallel()
	l := &completerLedger{}
	cp := (&Consumer{Ledger: l}).newCompleter(4)
	require.NotNil(t, cp)
	var wg sync.WaitGroup
	for _, a := range []string{"a", "b", "c"} {
		wg.Go(func() {
			it, err := cp.complete(t.Context(), completion(a), time.Hour)
			require.NoError(t, err)
			require.Equal(t, a, it.Key.Asset, "each member gets its own outcome")
		})
	}
	cp.drop(t.Context())
	wg.Wait()
	require.Len(t, l.batches, 1)
	require.ElementsMatch(t, []string{"a", "b", "c"}, l.batches[0])
	require.Empty(t, l.single)

	require.Nil(t, (&Consumer{Ledger: l}).newCompleter(1), "a wave of one completes alone")
}

// A member that waited its bound for the others completes alone; the
// wave's last member then writes only its own.
func TestCompleterDoesNotWaitPastItsBound(t *testing.T) {
	t.Parallel()
	l := &completerLedger{}
	cp := (&Consumer{Ledger: l}).newCompleter(2)
	it, err := cp.complete(t.Context(), completion("fast"), time.Millisecond) // the other member is still running
	require.NoError(t, err)
	require.Equal(t, "fast", it.Key.Asset)
	require.Equal(t, []string{"fast"}, l.single, "completed alone after its wait")

	it, err = cp.complete(t.Context(), completion("slow"), time.Hour)
	require.NoError(t, err)
	require.Equal(t, "slow", it.Key.Asset)
	require.Equal(t, []string{"fast", "slow"}, l.single, "the last member writes its own, alone")
	require.Empty(t, l.batches)
}
