package fx_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/examples/fx"
)

var tick = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)

// tasks make the tasks of the tick, bound to one in-memory effect store.
type tasks struct{ effects *batontest.Effects }

func newTasks() tasks { return tasks{batontest.NewEffects()} }

// task is the task of asset in the given generation of the tick, claimed
// with attempt, on a message carrying fence 7.
func (ts tasks) task(asset string, generation, attempt int) baton.Task {
	return ts.taskWithFence(asset, generation, attempt, 7)
}

func (ts tasks) taskWithFence(asset string, generation, attempt int, fence int64) baton.Task {
	return ts.effects.NewTask(batontest.TaskParams{
		Job: fx.Name, Asset: asset, Nominal: tick, Generation: generation, Attempt: attempt, Fence: fence,
	})
}

// bar reads asset's stored bar of the tick.
func (ts tasks) bar(t *testing.T, asset string) (fx.Bar, baton.Effect) {
	t.Helper()
	b, eff, err := fx.ReadBar(context.Background(), ts.task(asset, 1, 1).Effects, asset, fx.BarMinute(tick))
	require.NoError(t, err)
	return b, eff
}

func TestDefinition(t *testing.T) {
	t.Parallel()
	d := fx.Job(nil)
	require.NoError(t, d.Validate())
	require.Equal(t, "fx", d.Name)
	require.Equal(t, "rate(1 minute)", d.Schedule)
	require.Equal(t, []string{"EURUSD", "GBPUSD", "USDJPY", "USDCAD", "USDSEK", "USDCHF", "XAUUSD"}, d.Assets)
	require.Len(t, d.Derived, 1)
	require.Equal(t, "DXY", d.Derived[0].Name)
	require.ElementsMatch(t, []string{"EURUSD", "GBPUSD", "USDJPY", "USDCAD", "USDSEK", "USDCHF"}, d.Derived[0].Inputs)
	require.Equal(t, baton.Limits{
		LeaseTTL: 2 * time.Minute, ClockSkew: 2 * time.Second, ItemLease: 30 * time.Second,
		MaxAttempts: 5, Concurrency: 16, DeadlineMargin: 2 * time.Second,
	}, d.Limits)

	// Callers may not corrupt the source of truth.
	d.Assets[0] = "XXX"
	require.Equal(t, "EURUSD", fx.Job(nil).Assets[0])

	cat := fx.Catalog(nil)
	j, err := cat.Lookup("fx")
	require.NoError(t, err)
	require.NotNil(t, j.Processor)
	require.Equal(t, fx.Job(nil).Assets, j.Assets)
}

func TestSynthesizeIsDeterministicAndPlausible(t *testing.T) {
	t.Parallel()
	levels := map[string][2]float64{
		"EURUSD": {1.0, 1.2}, "GBPUSD": {1.15, 1.4}, "USDJPY": {135, 165}, "USDCAD": {1.25, 1.5},
		"USDSEK": {9.5, 11.5}, "USDCHF": {0.8, 0.97}, "XAUUSD": {1800, 2200},
	}
	minute := fx.BarMinute(tick)
	require.Equal(t, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), minute)
	for asset, rng := range levels {
		b, err := fx.Synthesize(asset, minute)
		require.NoError(t, err)
		again, err := fx.Synthesize(asset, minute.Add(30*time.Second))
		require.NoError(t, err)
		require.Equal(t, b, again, "%s: same minute, same bar", asset)
		next, err := fx.Synthesize(asset, minute.Add(time.Minute))
		require.NoError(t, err)
		require.NotEqual(t, b.Close, next.Close, "%s: another minute, another bar", asset)

		require.Equal(t, asset, b.Asset)
		require.Equal(t, minute, b.Minute)
		for _, p := range []float64{b.Open, b.High, b.Low, b.Close} {
			require.True(t, p >= rng[0] && p <= rng[1], "%s: price %v outside %v", asset, p, rng)
		}
		require.LessOrEqual(t, b.Low, min(b.Open, b.Close), asset)
		require.GreaterOrEqual(t, b.High, max(b.Open, b.Close), asset)
	}
	_, err := fx.Synthesize("BTCUSD", minute)
	require.ErrorContains(t, err, "BTCUSD")
}

func TestDollarIndex(t *testing.T) {
	t.Parallel()
	base := map[string]float64{"EURUSD": 1.08, "USDJPY": 150, "GBPUSD": 1.27, "USDCAD": 1.36, "USDSEK": 10.5, "USDCHF": 0.88}
	v, err := fx.DollarIndex(base)
	require.NoError(t, err)
	require.InDelta(t, 104.13615385, v, 1e-6)

	// A stronger euro weakens the dollar index.
	stronger := map[string]float64{}
	for k, p := range base {
		stronger[k] = p
	}
	stronger["EURUSD"] = 1.20
	w, err := fx.DollarIndex(stronger)
	require.NoError(t, err)
	require.Less(t, w, v)

	missing := map[string]float64{"EURUSD": 1.08}
	_, err = fx.DollarIndex(missing)
	require.ErrorContains(t, err, "no price for USDJPY")

	bad := map[string]float64{}
	for k, p := range base {
		bad[k] = p
	}
	bad["USDCHF"] = 0
	_, err = fx.DollarIndex(bad)
	require.ErrorContains(t, err, "USDCHF")

	bad["USDCHF"] = 0.88
	bad["USDJPY"] = 1.5 // a quote off by a factor of 100
	_, err = fx.DollarIndex(bad)
	require.ErrorContains(t, err, "plausible")
}

func TestProcessWritesFencedBar(t *testing.T) {
	t.Parallel()
	ts := newTasks()
	now := time.Date(2026, 11, 21, 12, 1, 2, 0, time.UTC)
	ts.effects.SetNow(func() time.Time { return now })
	p := fx.NewProcessor(nil)
	ctx := context.Background()

	out, err := p.Process(ctx, ts.task("USDJPY", 3, 1))
	require.NoError(t, err)
	var r fx.Bar
	require.NoError(t, json.Unmarshal(out, &r))
	want, err := fx.Synthesize("USDJPY", fx.BarMinute(tick))
	require.NoError(t, err)
	require.Equal(t, want, r)

	bar, eff := ts.bar(t, "USDJPY")
	require.Equal(t, 3, eff.Generation, "fenced by the generation")
	require.Equal(t, 1, eff.Attempt)
	require.Equal(t, want.Close, bar.Close)
	require.True(t, eff.WrittenAt.Equal(now))

	// A later attempt overwrites; an earlier one is stale and permanent.
	_, err = p.Process(ctx, ts.task("USDJPY", 3, 2))
	require.NoError(t, err)
	_, err = p.Process(ctx, ts.task("USDJPY", 3, 1))
	require.ErrorIs(t, err, baton.ErrStale)
	require.True(t, baton.IsPermanent(err))
	// A newer generation (a forced replay) outranks any attempt of an older one.
	_, err = p.Process(ctx, ts.task("USDJPY", 4, 1))
	require.NoError(t, err)
	_, err = p.Process(ctx, ts.task("USDJPY", 3, 9))
	require.ErrorIs(t, err, baton.ErrStale)
	_, eff = ts.bar(t, "USDJPY")
	require.Equal(t, 4, eff.Generation)
	require.Equal(t, 1, eff.Attempt)

	// The message's fence plays no part: after a resumed fan-out, a retry
	// may arrive on a copy with a lower fence than the first attempt's.
	_, err = p.Process(ctx, ts.taskWithFence("EURUSD", 1, 1, 6))
	require.NoError(t, err)
	_, err = p.Process(ctx, ts.taskWithFence("EURUSD", 1, 2, 5))
	require.NoError(t, err, "attempt 2 on a lower-fence copy is not stale")

	_, err = p.Process(ctx, ts.task("BTCUSD", 1, 1))
	require.True(t, baton.IsPermanent(err), "an asset without a price level is not retried: %v", err)
}

func TestProcessDerivesDXY(t *testing.T) {
	t.Parallel()
	ts := newTasks()
	p := fx.NewProcessor(nil)
	ctx := context.Background()

	inputs := map[string][]byte{}
	closes := map[string]float64{}
	opens := map[string]float64{}
	for _, a := range fx.DXYInputs {
		out, err := p.Process(ctx, ts.task(a, 1, 1))
		require.NoError(t, err)
		inputs[a] = out
		var r fx.Bar
		require.NoError(t, json.Unmarshal(out, &r))
		closes[a], opens[a] = r.Close, r.Open
	}
	dt := ts.task(fx.DXY, 1, 1)
	dt.Inputs = inputs
	out, err := p.Process(ctx, dt)
	require.NoError(t, err)
	var r fx.Bar
	require.NoError(t, json.Unmarshal(out, &r))
	wantClose, err := fx.DollarIndex(closes)
	require.NoError(t, err)
	wantOpen, err := fx.DollarIndex(opens)
	require.NoError(t, err)
	require.InDelta(t, wantClose, r.Close, 0.0006)
	require.InDelta(t, wantOpen, r.Open, 0.0006)
	require.InDelta(t, 104, r.Close, 6)
	require.Equal(t, max(r.Open, r.Close), r.High)
	require.Equal(t, min(r.Open, r.Close), r.Low)
	bar, _ := ts.bar(t, fx.DXY)
	require.Equal(t, r, bar)

	delete(dt.Inputs, "USDSEK")
	_, err = p.Process(ctx, dt)
	require.ErrorContains(t, err, "input USDSEK is missing")
	require.True(t, baton.IsPermanent(err))

	dt.Inputs["USDSEK"] = []byte("{not json")
	_, err = p.Process(ctx, dt)
	require.ErrorContains(t, err, "input USDSEK")
	require.True(t, baton.IsPermanent(err))
}

func TestLatencyHonoursContext(t *testing.T) {
	t.Parallel()
	var slept []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return ctx.Err()
	}
	ts := newTasks()
	p := fx.NewProcessor(&fx.Options{Latency: 1600 * time.Millisecond, SleepFunc: sleep})
	_, err := p.Process(context.Background(), ts.task("EURUSD", 1, 1))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{1600 * time.Millisecond}, slept)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Process(ctx, ts.task("GBPUSD", 1, 1))
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, baton.IsPermanent(err), "a timeout is retried")
	_, err = ts.effects.Get(context.Background(), fx.Name, fx.BarKey("GBPUSD", fx.BarMinute(tick)))
	require.ErrorIs(t, err, baton.ErrNotFound, "nothing written when the fetch was cut short")

	// The default sleep is a real timer that stops with the context.
	real := fx.NewProcessor(&fx.Options{Latency: time.Hour})
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = real.Process(ctx, ts.task("USDCAD", 1, 1))
	require.True(t, errors.Is(err, context.DeadlineExceeded), fmt.Sprint(err))
}
