package consumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
)

// The holder name a consumer gives an item's slots reads back as the
// item and the owner, whatever '/' the owner holds; other holders do not.
func TestHolderItem(t *testing.T) {
	t.Parallel()
	key := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC), Generation: 2}, Asset: "EURUSD"}
	c := &Consumer{Owner: "host-a/4242/consumer"}
	l := newTaskLimiter(c, baton.Job{Name: "fx"}, key, time.Time{})
	holder := l.holderName()
	require.Equal(t, holder, l.holderName(), "one name for all the item's holds")
	got, owner, ok := HolderItem(holder)
	require.True(t, ok, holder)
	require.Equal(t, key, got)
	require.Equal(t, "host-a/4242/consumer", owner)
	for _, h := range []string{"", "elsewhere", "a/b/c", "owner/fx@bad/EURUSD/x"} {
		_, _, ok := HolderItem(h)
		require.False(t, ok, h)
	}
}
