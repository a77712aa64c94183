// This file holds the Heartbeats group: an item that runs several times
// its lease while heartbeating is processed once, by its first attempt,
// with its message's visibility extended; and a cancel reaches a
// processor that never heartbeats, through the claim's own check.
package jobmodeltest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// itemLease is the item lease of the jobs: short, so that the long item runs
// several leases; the check of a non-heartbeating claim comes every third
// of it.
const itemLease = time.Second

// warnings records the messages of warnings logged.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) with(substr string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.msgs {
		if strings.Contains(m, substr) {
			out = append(out, m)
		}
	}
	return out
}

// TestHeartbeatingLongItem runs two jobs: "long", whose one item runs
// four leases and heartbeats every third of one, and "stuck", whose item
// blocks on its context until it is cancelled from outside, as `baton
// cancel` does.
func TestHeartbeatingLongItem(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	var mu sync.Mutex
	calls := map[string]int{}
	stuckStarted := make(chan struct{})
	var stuckCause error
	long := baton.Job{
		Name: "long", Schedule: "rate(1 minute)", Assets: []string{"slow"},
		Limits: baton.Limits{ItemLease: itemLease, ClockSkew: 50 * time.Millisecond},
		Processor: baton.ProcessorFunc(func(ctx context.Context, tk baton.Task) ([]byte, error) {
			mu.Lock()
			calls[tk.Key.String()]++
			mu.Unlock()
			for range 12 {
				select {
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case <-time.After(itemLease / 3):
				}
				if err := tk.Heartbeat(ctx); err != nil {
					return nil, err
				}
			}
			return []byte("done"), nil
		}),
	}
	stuck := baton.Job{
		Name: "stuck", Schedule: "rate(1 minute)", Assets: []string{"blocked"},
		Limits: baton.Limits{ItemLease: itemLease, ClockSkew: 50 * time.Millisecond},
		Processor: baton.ProcessorFunc(func(ctx context.Context, tk baton.Task) ([]byte, error) {
			close(stuckStarted)
			<-ctx.Done()
			mu.Lock()
			stuckCause = context.Cause(ctx)
			mu.Unlock()
			return []byte("too late"), nil
		}),
	}
	cat, err := baton.NewCatalog(long, stuck)
	require.NoError(t, err)
	w := &warnings{}
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 1, BatchTimeout: 30 * time.Second,
		RetryDelay: 100 * time.Millisecond, Logger: slog.New(w)})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	at := h.now()
	sum, err := eng.Trigger(t.Context(), "long", at, false)
	require.NoError(t, err)
	longRun := ledger.RunID{Job: "long", Nominal: sum.Nominal, Generation: 1}
	sum, err = eng.Trigger(t.Context(), "stuck", at, false)
	require.NoError(t, err)
	stuckRun := ledger.RunID{Job: "stuck", Nominal: sum.Nominal, Generation: 1}

	// Cancel the stuck item once its processor runs.
	select {
	case <-stuckStarted:
	case <-time.After(20 * time.Second):
		t.Fatal("the stuck item never started")
	}
	key := ledger.ItemKey{Run: stuckRun, Asset: "blocked"}
	_, err = b.Ledger.Cancel(t.Context(), ledger.CancelParams{Key: key, Reason: "cancelled by the test", Now: h.now()})
	require.NoError(t, err)

	run, items := waitFinishedItems(t, b.Ledger, stuckRun)
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, ledger.ItemCancelled, items[0].State)
	require.Equal(t, "cancelled by the test", items[0].Error)
	require.Empty(t, items[0].Result, "the late result was refused")
	mu.Lock()
	require.True(t, errors.Is(stuckCause, baton.ErrCancelled), "the processor's context ended with the cancel: %v", stuckCause)
	mu.Unlock()

	run, items = waitFinishedItems(t, b.Ledger, longRun)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, ledger.ItemSucceeded, items[0].State)
	require.Equal(t, 1, items[0].Attempt, "never taken over while it heartbeats")
	require.Equal(t, "done", string(items[0].Result))
	mu.Lock()
	require.Equal(t, 1, calls[items[0].Key.String()], "processed once")
	mu.Unlock()
	require.Empty(t, w.with("visibility"), "every heartbeat extended its message's visibility")
}
