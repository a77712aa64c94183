package clocktest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/clocktest"
)

func TestClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	c := clocktest.New(t0)
	require.Equal(t, t0, c.Now())
	require.Equal(t, t0, c.Now(), "the clock moved by itself")

	c.Advance(90 * time.Second)
	require.Equal(t, t0.Add(90*time.Second), c.Now())
	c.Advance(-30 * time.Second)
	require.Equal(t, t0.Add(time.Minute), c.Now())

	c.Set(t0.Add(-time.Hour))
	require.Equal(t, t0.Add(-time.Hour), c.Now())

	var zero clocktest.Clock
	require.True(t, zero.Now().IsZero())
}

func TestClockConcurrent(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	c := clocktest.New(t0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	require.Equal(t, t0.Add(800*time.Millisecond), c.Now())
}
