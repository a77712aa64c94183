// This file holds the Limits group: rate limits shared by a job's items
// (starts per interval), in-flight limits (slots held while an item
// works) and limits per key chosen at run time.
package jobmodeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
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

// TestKeyedLimits runs a tick of a job whose items fetch from five hosts,
// under a keyed PerItem limit of 1 start per second per host (the
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
func TestKeyedLimits(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
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
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 1, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	// The hot host's run first: once its first item started, its batch
	// holds the one consumer; then the cold hosts' run.
	hotRun, err := eng.Trigger(t.Context(), "hot", h.now(), false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(started) > 0 }, 30*time.Second, 10*time.Millisecond)
	coldRun, err := eng.Trigger(t.Context(), "cold", h.now(), false)
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

// TestSharedRateLimits runs a tick of a job of 40 items whose every item
// takes a start of a shared limit of 10 per 250 ms before it starts
// (PerItem), and whose processor takes one more of a second limit through
// Task.Wait: the items all succeed, spread over at least three windows of
// each limit, and Task.Wait of a limit the job does not declare fails.
func TestSharedRateLimits(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const per = 250 * time.Millisecond
	var mu sync.Mutex
	var starts, calls []time.Time
	var undeclared error
	proc := baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		if err := task.Wait(ctx, "partner-api"); err != nil {
			return nil, err
		}
		mu.Lock()
		calls = append(calls, time.Now())
		if task.Asset == "r00" {
			undeclared = task.Wait(ctx, "nope")
		}
		mu.Unlock()
		return nil, nil
	})
	assets := make([]string, 40)
	for i := range assets {
		assets[i] = fmt.Sprintf("r%02d", i)
	}
	cat, err := baton.NewCatalog(baton.Job{
		Name: "limited", Schedule: "rate(1 hour)", Assets: assets, Processor: proc,
		RateLimits: []baton.RateLimit{
			{Name: "item-starts", Starts: 10, Per: per, PerItem: true},
			{Name: "partner-api", Starts: 10, Per: per},
		},
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	sum, err := eng.Trigger(t.Context(), "limited", h.now(), false)
	require.NoError(t, err)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 40, run.Succeeded)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, 40)
	for name, ts := range map[string][]time.Time{"item-starts": starts, "partner-api": calls} {
		first, last := ts[0], ts[0]
		perWindow := map[int64]int{}
		for _, at := range ts {
			first, last = minTime(first, at), maxTime(last, at)
			perWindow[at.UnixNano()/int64(per)]++
		}
		// 40 starts of 10 per window take four windows at least: the first
		// and the last are three windows apart, less the first's offset.
		require.GreaterOrEqual(t, last.Sub(first), 2*per, "%s: 40 starts spread over four windows", name)
		t.Logf("%s: 40 starts over %s, %d windows", name, last.Sub(first).Round(time.Millisecond), len(perWindow))
	}
	require.ErrorContains(t, undeclared, `declares no rate limit "nope"`)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestInFlightLimit runs a tick of 24 items whose every item holds a
// slot of a shared limit of 3 in flight (PerItem), held while it works
// and given back when it ends; its processor asks for the same limit
// again through Task.Wait, which takes nothing more. With 8 consumers at
// most 3 items are ever in their processor at once, every item succeeds,
// and afterwards every slot is free.
func TestInFlightLimit(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const slots = 3
	gpu := fmt.Sprintf("gpu-%d", time.Now().UnixNano()) // the store may be shared with other tests
	var cur, peak atomic.Int64
	proc := baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		if err := task.Wait(ctx, gpu); err != nil { // held already: returns at once
			return nil, err
		}
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select { // work long enough for the consumers to overlap
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(60 * time.Millisecond):
		}
		return nil, nil
	})
	assets := make([]string, 24)
	for i := range assets {
		assets[i] = fmt.Sprintf("g%02d", i)
	}
	cat, err := baton.NewCatalog(baton.Job{
		Name: "inflight", Schedule: "rate(1 hour)", Assets: assets, Processor: proc,
		RateLimits: []baton.RateLimit{{Name: gpu, InFlight: slots, PerItem: true}},
		Limits:     baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 8, BatchSize: 1, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	sum, err := eng.Trigger(t.Context(), "inflight", h.now(), false)
	require.NoError(t, err)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 24, run.Succeeded)
	require.LessOrEqual(t, peak.Load(), int64(slots), "never more items in flight than the limit")
	t.Logf("in flight at most %d of %d", peak.Load(), slots)
	now := h.now()
	for s := range slots {
		require.NoError(t, b.RateLimits.Hold(t.Context(), ratelimit.SlotParams{Name: gpu, Slot: s, Holder: "probe", Until: now.Add(time.Second), Now: now}),
			"slot %d was given back when its item ended", s)
	}
}
