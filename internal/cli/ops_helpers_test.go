package cli

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// opsFixture is a store the CLI works on, opened a second time by the test
// to arrange state and to check the CLI's effects against the ledger.
type opsFixture struct {
	t     *testing.T
	flags []string // selects the fixture's backend on the command line
	b     backend.Backend
	calls *callCounter
	eng   *exec.Runtime // consumes with a processor that counts its calls
	// base is a minute tick half an hour ago: the tests' ticks are after it.
	base time.Time
}

func newSQLiteFixture(t *testing.T) *opsFixture {
	t.Helper()
	store := filepath.Join(t.TempDir(), "baton.db")
	b, err := sqlitebackend.Open(t.Context(), store)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return newFixture(t, b, []string{"--store", store})
}

func newFixture(t *testing.T, b backend.Backend, flags []string) *opsFixture {
	t.Helper()
	f := &opsFixture{t: t, flags: flags, b: b, calls: &callCounter{n: map[string]int{}}}
	catalog := fx.Catalog(nil)
	fx, _ := catalog.Lookup(fx.Name)
	fx.Processor = countingProcessor{inner: fx.Processor, calls: f.calls}
	catalog = baton.MustCatalog(fx)
	eng, err := exec.New(b, exec.Options{Catalog: catalog, Owner: "test", RetryDelay: 10 * time.Millisecond})
	require.NoError(t, err)
	f.eng = eng
	f.base = time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	return f
}

// main runs baton with args followed by the fixture's backend flags.
// Replays run consumers in process on every backend (on AWS they would
// otherwise wait for deployed ones).
func (f *opsFixture) main(args ...string) (code int, stdout, stderr string) {
	f.t.Helper()
	all := append(append([]string{}, args...), f.flags...)
	if len(args) > 1 && args[0] == "replay" && !slices.Contains(args, "--consumers") && !slices.Contains(args, "--dry-run") {
		all = append(all, "--consumers", "2")
	}
	return runMain(f.t, all...)
}

// tick is the fixture's i-th minute tick.
func (f *opsFixture) tick(i int) time.Time { return f.base.Add(time.Duration(i) * time.Minute) }

func (f *opsFixture) run(i, generation int) ledger.RunID {
	return ledger.RunID{Job: fx.Name, Nominal: f.tick(i), Generation: generation}
}

func (f *opsFixture) items(id ledger.RunID) map[string]ledger.Item {
	f.t.Helper()
	items, err := f.b.Ledger.ListItems(f.t.Context(), id)
	require.NoError(f.t, err)
	out := map[string]ledger.Item{}
	for _, it := range items {
		out[it.Key.Asset] = it
	}
	return out
}

// consumeOutcomes receives from the work queue and hands each batch to
// the fixture's consumer, as the poller does, until done holds for the
// outcomes seen so far (or fails the test after a while). It returns them.
func (f *opsFixture) consumeOutcomes(done func([]consumer.MessageOutcome) bool) []consumer.MessageOutcome {
	f.t.Helper()
	ctx := f.t.Context()
	var seen []consumer.MessageOutcome
	deadline := time.Now().Add(30 * time.Second)
	for !done(seen) {
		require.True(f.t, time.Now().Before(deadline), "consumer outcomes so far: %+v", seen)
		msgs, err := f.b.Work.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute, Wait: time.Second, Now: time.Now()})
		require.NoError(f.t, err)
		if len(msgs) == 0 {
			continue
		}
		res := f.eng.Consumer.Handle(ctx, time.Now().Add(30*time.Second), msgs)
		failed := map[string]bool{}
		for _, fl := range res.Failed {
			failed[fl.MessageID] = true
		}
		for _, m := range msgs {
			if failed[m.MessageID] {
				_ = f.b.Work.ChangeVisibility(ctx, queue.ChangeVisibilityParams{ReceiptHandle: m.ReceiptHandle, Now: time.Now()})
				continue
			}
			require.NoError(f.t, f.b.Work.Delete(ctx, m.ReceiptHandle))
		}
		seen = append(seen, res.Items...)
	}
	return seen
}

// handled reports whether outcomes hold key with one of the statuses.
func handled(outcomes []consumer.MessageOutcome, key ledger.ItemKey, statuses ...string) bool {
	for _, o := range outcomes {
		if o.Key == key.String() && slices.Contains(statuses, o.Status) {
			return true
		}
	}
	return false
}

type callCounter struct {
	mu sync.Mutex
	n  map[string]int // by item key
}

func (c *callCounter) get(key ledger.ItemKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key.String()]
}

func (c *callCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for _, n := range c.n {
		sum += n
	}
	return sum
}

type countingProcessor struct {
	inner baton.Processor
	calls *callCounter
}

func (p countingProcessor) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	p.calls.mu.Lock()
	p.calls.n[t.Key.String()]++
	p.calls.mu.Unlock()
	return p.inner.Process(ctx, t)
}
