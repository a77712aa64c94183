package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ratelimit"
)

func TestHottestBoundsAndOrders(t *testing.T) {
	t.Parallel()
	us := []ratelimit.Usage{{Key: "b", Starts: 2}, {Key: "a", Starts: 2}, {Key: "c", Starts: 9},
		{Key: "d", Holds: []ratelimit.Hold{{Slot: 0}, {Slot: 1}, {Slot: 2}}}, {Key: "e", Starts: 1}}
	hot, rest := ratelimit.Hottest(us, 3)
	require.Equal(t, 2, rest)
	require.Equal(t, []string{"c", "d", "a"}, []string{hot[0].Key, hot[1].Key, hot[2].Key})
	require.Equal(t, "b", us[0].Key, "the input is not reordered")
	all, rest := ratelimit.Hottest(us, 10)
	require.Len(t, all, 5)
	require.Zero(t, rest)
}

func TestWindowIsTheTakersWindow(t *testing.T) {
	t.Parallel()
	l := ratelimit.Limit{Name: "x", Starts: 1, Per: 250 * time.Millisecond}
	now := time.Date(2026, 11, 21, 12, 0, 0, 300_000_000, time.UTC)
	require.Equal(t, now.UnixNano()/int64(250*time.Millisecond), l.Window(now))
}
