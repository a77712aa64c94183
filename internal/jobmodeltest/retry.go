// This file holds the Retries group: the delays a failed item waits
// before its next attempt.
package jobmodeltest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// RetryDelays are the delays TestRetryDelays asks for: a processor's
// RetryAfter, and a job's RetryPolicy (its first retry waits MinDelay).
const (
	RetryAfterDelay  = 1500 * time.Millisecond
	RetryPolicyDelay = time.Second
)

// TestRetryDelays runs a tick of a job whose items fail their first
// attempt (invariant 14): "ratelimited" returns
// baton.RetryAfter(RetryAfterDelay), "flaky" a plain error under the job's
// RetryPolicy{MinDelay: RetryPolicyDelay}, "doomed" a Permanent error
// wrapped in RetryAfter. The next attempt of each of the first two starts
// no sooner than its delay after the failure (and within a few polls of
// it: the engine's retry delay of 100 ms would have brought it back at
// once); "doomed" ends DEAD after one attempt. The engine's own retry
// delay is short, so a delay that is not applied shows.
func TestRetryDelays(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	var mu sync.Mutex
	failedAt := map[string]time.Time{}
	retriedAt := map[string]time.Time{}
	proc := baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if t.Attempt > 1 {
			retriedAt[t.Asset] = time.Now()
			return []byte("ok"), nil
		}
		failedAt[t.Asset] = time.Now()
		switch t.Asset {
		case "ratelimited":
			return nil, baton.RetryAfter(RetryAfterDelay, errors.New("HTTP 429, Retry-After: 1.5"))
		case "doomed":
			return nil, baton.RetryAfter(time.Second, baton.Permanent(errors.New("HTTP 410")))
		default:
			return nil, errors.New("HTTP 503")
		}
	})
	cat, err := baton.NewCatalog(baton.Job{
		Name: "retrying", Schedule: "rate(1 hour)", Assets: []string{"doomed", "flaky", "ratelimited"}, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
		Retry:  baton.RetryPolicy{MinDelay: RetryPolicyDelay, MaxDelay: RetryPolicyDelay},
	})
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	sum, err := eng.Trigger(t.Context(), "retrying", h.now(), false)
	require.NoError(t, err)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, 2, run.Succeeded)
	require.Equal(t, 1, run.Dead)

	mu.Lock()
	defer mu.Unlock()
	for asset, want := range map[string]time.Duration{"ratelimited": RetryAfterDelay, "flaky": RetryPolicyDelay} {
		require.Contains(t, retriedAt, asset)
		waited := retriedAt[asset].Sub(failedAt[asset])
		require.GreaterOrEqual(t, waited, want, "%s was retried %s after it failed, before its delay of %s", asset, waited, want)
		// Generous: a loaded machine polls late; without the delay the
		// retry would come within the engine's 100 ms.
		require.Less(t, waited, want+20*time.Second, "%s was retried %s after it failed", asset, waited)
	}
	require.NotContains(t, retriedAt, "doomed", "Permanent wins over RetryAfter")
	dead, err := b.Ledger.GetItem(t.Context(), ledger.ItemKey{Run: sum.Run, Asset: "doomed"})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemDead, dead.State)
	require.Equal(t, 1, dead.Attempt)
}
