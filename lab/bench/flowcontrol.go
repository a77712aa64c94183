package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ratelimit"
)

// KeyedLimit measures a keyed limit of 5 starts per second per key, taken
// for keys keys by 2 groups ("processes", each its own store handle) of 8
// callers for span on tg. Each caller tries a start of a key drawn at
// random, the hot key ten times as often as each other one, and moves on
// to another key when the key's window is full (as a consumer gives a
// busy key's message back). The figures, over the whole windows of span:
// the cold keys' mean observed rate, read against the limit (goal 90–105
// %), the hot key's rate (at most the limit), and the most starts any key
// got in one window (at most 5).
func KeyedLimit(ctx context.Context, tg Target, keys int, span time.Duration) ([]Row, error) {
	env, err := tg.OpenFunc(ctx, "keyedlimit")
	if err != nil {
		return nil, err
	}
	defer env.Close()
	store := env.Plain.RateLimits
	if store == nil {
		return nil, fmt.Errorf("%s: no rate limit store", tg.Name)
	}
	const starts, per = 5, time.Second
	name := fmt.Sprintf("bench-keyed-%d", time.Now().UnixNano())
	limit := func(k int) ratelimit.Limit {
		return ratelimit.Limit{Name: ratelimit.KeyedName(name, fmt.Sprintf("host-%04d.example.com", k)), Starts: starts, Per: per}
	}
	// Key 0 is hot: drawn with weight 10, every other key with weight 1.
	pick := func() int {
		n := rand.IntN(keys + 9)
		if n < 10 {
			return 0
		}
		return n - 9
	}
	type grant struct {
		key    int
		window int64
	}
	var mu sync.Mutex
	grants := map[grant]int{}
	attempts := 0
	lm := ratelimit.Limiter{Store: store}
	ctx, cancel := context.WithTimeout(ctx, span)
	defer cancel()
	var wg sync.WaitGroup
	var errs []error
	for range 2 * 8 {
		wg.Go(func() {
			n := 0
			for ctx.Err() == nil {
				k := pick()
				now := time.Now()
				ok, _, err := lm.TryTake(ctx, limit(k), now)
				n++
				if err != nil {
					mu.Lock()
					if ctx.Err() == nil {
						errs = append(errs, err)
					}
					attempts += n
					mu.Unlock()
					return
				}
				if ok {
					mu.Lock()
					grants[grant{k, now.UnixNano() / int64(per)}]++
					mu.Unlock()
				}
			}
			mu.Lock()
			attempts += n
			mu.Unlock()
		})
	}
	start := time.Now()
	wg.Wait()
	end := time.Now()
	// Whole windows only: the first and the last are cut by the span.
	first, last := start.UnixNano()/int64(per)+1, end.UnixNano()/int64(per)-1
	windows := float64(last - first + 1)
	perKey := make([]float64, keys)
	most := 0
	for g, n := range grants {
		most = max(most, n)
		if g.window >= first && g.window <= last {
			perKey[g.key] += float64(n)
		}
	}
	cold := 0.0
	for _, n := range perKey[1:] {
		cold += n / windows
	}
	cold /= float64(keys - 1)
	hot := perKey[0] / windows
	total := 0
	for _, n := range grants {
		total += n
	}
	note := fmt.Sprintf("%d keys (one hot, drawn 10× as often), %d starts in %d takes, %.0f whole windows", keys, total, attempts, windows)
	rows := []Row{
		{Scenario: "13 keyed limit", Backend: tg.Name, Figure: fmt.Sprintf("a cold key's starts/s of a 5/s-per-key limit, 2×8 callers, %s", span),
			Value: cold, Reference: starts, RefText: "the limit", Unit: Count, Note: note,
			Goal: &Goal{Text: "90–105 % of 5/s", MetFunc: func(r Row) bool { return r.Value >= 0.9*starts && r.Value <= 1.05*starts }}},
		{Scenario: "13 keyed limit", Backend: tg.Name, Figure: "the hot key's starts/s (10× the demand of a cold one)",
			Value: hot, Reference: starts, RefText: "the limit", Unit: Count,
			Goal: &Goal{Text: "≤ 105 % of 5/s", MetFunc: func(r Row) bool { return r.Value <= 1.05*starts }}},
		{Scenario: "13 keyed limit", Backend: tg.Name, Figure: "most starts of one key in one window",
			Value: float64(most), Reference: starts, RefText: "the limit", Unit: Count,
			Goal: &Goal{Text: "≤ 5", MetFunc: func(r Row) bool { return r.Value <= starts }}},
	}
	return rows, errors.Join(errs...)
}

// RetryDelay measures how long after a failed attempt its next one
// starts, on tg, for items whose processor returns
// baton.RetryAfter(delay) on their first attempt: the shortest and the
// longest wait, read against the delay (goal: never shorter; at most the
// delay plus one poll, the engine's receive wait plus a batch's hand-off).
func RetryDelay(ctx context.Context, tg Target, items int, delay time.Duration) ([]Row, error) {
	env, err := tg.OpenFunc(ctx, "retrydelay")
	if err != nil {
		return nil, err
	}
	defer env.Close()
	var mu sync.Mutex
	failed, retried := map[string]time.Time{}, map[string]time.Time{}
	assets := make([]string, items)
	for i := range assets {
		assets[i] = fmt.Sprintf("item-%03d", i)
	}
	j := baton.Job{
		Name: "retrydelay", Schedule: "rate(1 hour)", Assets: assets,
		Limits: baton.Limits{ItemLease: 10 * time.Second},
		Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			if t.Attempt == 1 {
				failed[t.Asset] = time.Now()
				return nil, baton.RetryAfter(delay, errors.New("HTTP 429"))
			}
			retried[t.Asset] = time.Now()
			return []byte("ok"), nil
		}),
	}
	e, err := exec.New(env.Plain, exec.Options{Catalog: baton.MustCatalog(j), Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Consume(cctx) }()
	defer func() { stop(); <-done }()
	sum, err := e.Trigger(ctx, j.Name, time.Now(), false)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		run, err := ledger.GetRunOf(wctx, env.Plain.Ledger, sum.Run)
		if err == nil && run.State.Finished() {
			break
		}
		if wctx.Err() != nil {
			return nil, fmt.Errorf("%s: retry delay run not finished: %w", tg.Name, wctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var waits []time.Duration
	for a, at := range retried {
		waits = append(waits, at.Sub(failed[a]))
	}
	if len(waits) == 0 {
		return nil, fmt.Errorf("%s: no item was retried", tg.Name)
	}
	slices.Sort(waits)
	poll := env.Plain.ReceiveWait
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	note := fmt.Sprintf("%d items, each failing its first attempt with RetryAfter(%s); median %s", len(waits), delay, waits[len(waits)/2].Round(time.Millisecond))
	return []Row{
		{Scenario: "14 retry delay", Backend: tg.Name, Figure: "shortest wait before the next attempt",
			Value: waits[0].Seconds(), Reference: delay.Seconds(), RefText: "RetryAfter", Unit: Duration, Note: note,
			Goal: &Goal{Text: "≥ the delay", MetFunc: func(r Row) bool { return r.Value >= r.Reference }}},
		{Scenario: "14 retry delay", Backend: tg.Name, Figure: "longest wait before the next attempt",
			Value: waits[len(waits)-1].Seconds(), Reference: delay.Seconds(), RefText: "RetryAfter", Unit: Duration,
			Goal: &Goal{Text: fmt.Sprintf("≤ delay + one poll (%s) + 1 s", poll), MetFunc: func(r Row) bool {
				return r.Value <= r.Reference+(poll+time.Second).Seconds()
			}}},
	}, nil
}
