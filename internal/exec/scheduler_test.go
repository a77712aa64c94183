package exec

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// everyMinute ticks at each whole minute.
type everyMinute struct{}

func (everyMinute) Next(t time.Time) time.Time { return t.Truncate(time.Minute).Add(time.Minute) }

func TestSchedulerFiresAtEachTick(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var fired []time.Time
		s := &scheduler{schedule: everyMinute{}, fireFunc: func(_ context.Context, at time.Time) {
			fired = append(fired, at)
			if len(fired) == 3 {
				cancel()
			}
		}}
		start := time.Now()
		require.NoError(t, s.run(ctx))
		require.Len(t, fired, 3)
		first := start.Truncate(time.Minute).Add(time.Minute)
		for i, at := range fired {
			require.Equal(t, first.Add(time.Duration(i)*time.Minute), at, "fire %d", i)
		}
	})
}

func TestSchedulerSkipsTicksMissedBySlowFire(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var fired []time.Time
		s := &scheduler{schedule: everyMinute{}, fireFunc: func(_ context.Context, at time.Time) {
			fired = append(fired, at)
			if len(fired) == 1 {
				time.Sleep(150 * time.Second) // overruns two ticks
			}
			if len(fired) == 2 {
				cancel()
			}
		}}
		require.NoError(t, s.run(ctx))
		require.Len(t, fired, 2)
		require.Equal(t, 3*time.Minute, fired[1].Sub(fired[0]), "missed ticks are not fired late")
	})
}

func TestSchedulerStopsOnCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			done <- (&scheduler{schedule: everyMinute{}, fireFunc: func(context.Context, time.Time) { t.Error("fired") }}).run(ctx)
		}()
		time.Sleep(time.Second)
		cancel()
		require.NoError(t, <-done)
	})
}

func TestSchedulerRejectsMissingParts(t *testing.T) {
	t.Parallel()
	require.Error(t, (&scheduler{}).run(t.Context()))
}
