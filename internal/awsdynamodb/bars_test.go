package awsdynamodb_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/bars"
)

func TestBarRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	asset := uniqueName(t)
	bar := bars.Bar{Asset: asset, Minute: t0, Open: 1.0842, High: 1.0851, Low: 1.0839, Close: 1.0848, Fence: 3, Attempt: 1, WrittenAt: t0.Add(time.Second)}
	require.NoError(t, b.bars.Put(ctx, bar))
	require.Equal(t, map[string]int{"PutItem": 1}, b.rec.Counts())

	rec := b.raw(t, "BAR#"+asset, "2026-11-21T12:00:00Z")
	require.Equal(t, "1.0842", attrN(rec, "open"))
	require.Equal(t, "3", attrN(rec, "fence"))
	require.NotContains(t, rec, "ttl")

	got, err := b.bars.Get(ctx, asset, t0)
	require.NoError(t, err)
	require.Equal(t, bar, got)

	_, err = b.bars.Get(ctx, asset, t0.Add(time.Minute))
	require.ErrorIs(t, err, bars.ErrNotFound)
}

func TestBarFencing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	asset := uniqueName(t)
	put := func(fence int64, attempt int, close float64) error {
		return b.bars.Put(ctx, bars.Bar{Asset: asset, Minute: t0, Open: 1, High: 2, Low: 0.5, Close: close, Fence: fence, Attempt: attempt, WrittenAt: t0})
	}
	require.NoError(t, put(2, 2, 1.1))
	require.ErrorIs(t, put(2, 1, 1.2), bars.ErrStale)
	require.ErrorIs(t, put(1, 9, 1.3), bars.ErrStale)
	require.NoError(t, put(2, 2, 1.4), "the same attempt may write again")
	require.NoError(t, put(3, 1, 1.5), "a higher fence wins whatever the attempt")
	got, err := b.bars.Get(ctx, asset, t0)
	require.NoError(t, err)
	require.Equal(t, 1.5, got.Close)
	require.Equal(t, int64(3), got.Fence)
	require.Equal(t, 1, got.Attempt)
}

func TestBarInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for _, bar := range []bars.Bar{
		{Asset: "", Minute: t0},
		{Asset: "EUR USD", Minute: t0},
		{Asset: "EURUSD", Minute: t0, Close: math.NaN()},
		{Asset: "EURUSD", Minute: t0, High: math.Inf(1)},
		{Asset: "EURUSD", Minute: t0, Low: 1e300},
	} {
		require.Error(t, b.bars.Put(ctx, bar), "%+v", bar)
	}
	require.Empty(t, b.rec.Counts())
}

func TestBarLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	asset := uniqueName(t)
	b.rec.LoseFunc = func(op string) bool { return op == "PutItem" }
	require.NoError(t, b.bars.Put(ctx, bars.Bar{Asset: asset, Minute: t0, Close: 1, Fence: 1, Attempt: 1, WrittenAt: t0}))
	require.Equal(t, map[string]int{"PutItem": 1, "GetItem": 1}, b.rec.Counts())
	// Lost, and refused: the error says it did not apply, not that it is stale.
	err := b.bars.Put(ctx, bars.Bar{Asset: asset, Minute: t0, Close: 2, Fence: 0, Attempt: 1, WrittenAt: t0})
	require.ErrorContains(t, err, "not applied")
	b.rec.LoseFunc = nil
	got, err := b.bars.Get(ctx, asset, t0)
	require.NoError(t, err)
	require.Equal(t, 1.0, got.Close)
}
