package itemstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ratelimit"
)

// grantLog records the starts a rate limit store grants, by record and
// window.
type grantLog struct {
	ratelimit.Store
	mu     sync.Mutex
	grants map[string]map[int64]int // record → window → starts granted
}

func (g *grantLog) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	n, err := g.Store.Take(ctx, p)
	if err == nil {
		g.mu.Lock()
		if g.grants[p.Name] == nil {
			g.grants[p.Name] = map[int64]int{}
		}
		g.grants[p.Name][p.Window]++
		g.mu.Unlock()
	}
	return n, err
}

// RunKeyedLimits runs a tick of a job whose items fetch from five hosts
// on b, under a keyed PerItem limit of 1 start per second per host (the
// key from the item's name, invariant 13): a run of 12 items of a hot
// host, then, once the first started, a run of four cold hosts' items, 2
// each, on one consumer of batches of 10. No host's window grants more than its limit; two hosts
// share a window, each with its own start (the limit is per key, not
// shared); the cold hosts' items all end before the hot host's 10th start,
// nine seconds after its first (a hot key does not hold back cold ones:
// its items waiting longer than consumer.KeyedWait give their message
// back, where a batch of ten hot items waiting their turn would hold the
// consumer until its tenth start). Its
// processor also takes a keyed in-flight limit of 1 per tenant through
// Task.WaitKey (never two of one tenant at once), and the bad keys are
// typed errors.
func RunKeyedLimits(t *testing.T, b backend.Backend) {
	t.Helper()
	log := &grantLog{Store: b.RateLimits, grants: map[string]map[int64]int{}}
	b.RateLimits = log
	const per = time.Second
	var assets []string
	for i := range 12 {
		assets = append(assets, fmt.Sprintf("hot.example.com_%02d", i))
	}
	for h := range 4 {
		for i := range 2 {
			assets = append(assets, fmt.Sprintf("cold%d.example.com_%02d", h, i))
		}
	}
	host := func(asset string) string { h, _, _ := strings.Cut(asset, "_"); return h }

	var mu sync.Mutex
	started, ended := map[string]time.Time{}, map[string]time.Time{}
	inTenant := map[string]int{}
	overlap := 0
	var badKeys []error
	proc := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		tenant := "tenant-" + host(t.Asset)[:3] // "tenant-hot", "tenant-col"
		if err := t.WaitKey(ctx, "per-tenant", tenant); err != nil {
			return nil, err
		}
		mu.Lock()
		started[t.Asset] = time.Now()
		if inTenant[tenant]++; inTenant[tenant] > 1 {
			overlap++
		}
		if t.Asset == assets[0] {
			badKeys = append(badKeys, t.WaitKey(ctx, "per-tenant", ""), t.WaitKey(ctx, "per-tenant", strings.Repeat("k", baton.MaxLimitKey+1)),
				t.WaitKey(ctx, "nope", "k"), t.Wait(ctx, "per-tenant"))
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inTenant[tenant]--
		ended[t.Asset] = time.Now()
		mu.Unlock()
		return []byte("ok"), nil
	})
	limits := []baton.RateLimit{
		{Name: "per-host", Starts: 1, Per: per, PerItem: true, Keyed: true, Key: func(t baton.Task) string { return host(t.Asset) }},
		{Name: "per-tenant", InFlight: 1, Keyed: true},
	}
	job := func(name string, assets []string) baton.Job {
		return baton.Job{
			Name: name, Schedule: "rate(1 hour)", Assets: assets, Processor: proc, RateLimits: limits,
			Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond, MaxAttempts: 3},
		}
	}
	cat, err := baton.NewCatalog(job("hot", assets[:12]), job("cold", assets[12:]))
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 1, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer consume(t, eng)()

	// The hot host's run first: once its first item started, its batch
	// holds the one consumer; then the cold hosts' run.
	hotRun, err := eng.Trigger(t.Context(), "hot", time.Now(), false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(started) > 0 }, 30*time.Second, 10*time.Millisecond)
	coldRun, err := eng.Trigger(t.Context(), "cold", time.Now(), false)
	require.NoError(t, err)
	for _, id := range []ledger.RunID{hotRun.Run, coldRun.Run} {
		run := waitFinished(t, b.Ledger, id)
		require.Equal(t, ledger.RunComplete, run.State, "%s", id)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	windows := map[int64]int{} // window → hosts granted a start in it
	for rec, byWindow := range log.grants {
		name, key, ok := ratelimit.KeyOf(rec)
		if !ok || name != "per-host" {
			continue
		}
		require.Contains(t, key, ".example.com", "the record is the item's host")
		for w, n := range byWindow {
			require.LessOrEqual(t, n, 1, "host %s was granted %d starts in window %d", key, n, w)
			windows[w]++
		}
	}
	shared := 0
	for _, hosts := range windows {
		if hosts > 1 {
			shared++
		}
	}
	require.Positive(t, shared, "no two hosts ever started in one window: the limit is not per key")

	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, overlap, "two items of one tenant held its in-flight slot at once")
	var hot []time.Time
	for a, at := range started {
		if host(a) == "hot.example.com" {
			hot = append(hot, at)
		}
	}
	slices.SortFunc(hot, time.Time.Compare)
	require.Len(t, hot, 12)
	for a, at := range ended {
		if host(a) != "hot.example.com" {
			require.True(t, at.Before(hot[9]), "cold item %s ended at %s, after the hot host's 10th start %s: held back by the hot key", a, at.Format(time.StampMilli), hot[9].Format(time.StampMilli))
		}
	}
	require.Len(t, badKeys, 4)
	require.ErrorIs(t, badKeys[0], baton.ErrLimitKey, "empty key")
	require.ErrorIs(t, badKeys[1], baton.ErrLimitKey, "key too long")
	require.ErrorIs(t, badKeys[2], baton.ErrUnknownLimit)
	require.ErrorIs(t, badKeys[3], baton.ErrLimitKey, "Wait of a keyed limit")
	require.False(t, errors.Is(badKeys[2], baton.ErrLimitKey))
}
