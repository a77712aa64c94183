package limitstatus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/limitstatus"
	"github.com/batonhq/baton/internal/ratelimit"
)

// listed is a ratelimit.Store whose Lister answers us.
type listed struct {
	ratelimit.Store
	us []ratelimit.Usage
}

func (l listed) ListUsage(context.Context, ratelimit.ListParams) ([]ratelimit.Usage, error) {
	return l.us, nil
}

var now = time.Date(2026, 11, 21, 12, 1, 0, 500_000_000, time.UTC)

// At most Top keys are shown, the most loaded first (a key with waiters
// only comes after the loaded ones), and the others counted; the
// waiters are the items whose noted wait names the limit.
func TestReadBoundsAndMergesWaiters(t *testing.T) {
	t.Parallel()
	var us []ratelimit.Usage
	for i := range 15 {
		us = append(us, ratelimit.Usage{Key: fmt.Sprintf("host-%02d", i), Starts: i + 1})
	}
	job := baton.Job{Name: "feeds", RateLimits: []baton.RateLimit{{Name: "per-host", Starts: 20, Per: time.Second, Keyed: true}}}
	run := ledger.RunID{Job: "feeds", Nominal: now.Truncate(time.Minute), Generation: 1}
	waiting := []ledger.Item{
		{Key: ledger.ItemKey{Run: run, Asset: "a"}, State: ledger.ItemFailed, Wait: ledger.ItemWait{At: now.Add(time.Second), Limit: "per-host", Key: "host-14"}},
		{Key: ledger.ItemKey{Run: run, Asset: "b"}, State: ledger.ItemFailed, Wait: ledger.ItemWait{At: now.Add(time.Second), Limit: "per-host", Key: "quiet"}},
		{Key: ledger.ItemKey{Run: run, Asset: "c"}, State: ledger.ItemFailed, Attempt: 1, Wait: ledger.ItemWait{At: now.Add(time.Minute), Attempt: 1}},
	}
	got := limitstatus.Read(t.Context(), limitstatus.Params{Job: job, Store: listed{us: us}, Items: waiting, Now: now})
	require.Len(t, got, 1)
	l := got[0]
	require.Len(t, l.Keys, limitstatus.Top)
	require.Equal(t, 16-limitstatus.Top, l.OtherKeys, "15 keys in use and one waited on")
	require.Equal(t, "host-14", l.Keys[0].Key)
	require.Equal(t, 15, l.Keys[0].Starts)
	require.Equal(t, []limitstatus.Waiter{{Item: waiting[0].Key.String(), NextAttempt: now.Add(time.Second)}}, l.Keys[0].Waiters)
	require.Equal(t, 2, l.Waiting, "the retry delay is no limit's waiter")
	require.Equal(t, time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC), *l.Window)

	got = limitstatus.Read(t.Context(), limitstatus.Params{Job: job, Store: listed{us: us}, Items: waiting, Now: now, Top: 20})
	require.Len(t, got[0].Keys, 16)
	require.Equal(t, "quiet", got[0].Keys[15].Key)
	require.Zero(t, got[0].OtherKeys)

	got = limitstatus.Read(t.Context(), limitstatus.Params{Job: job, Items: waiting, Now: now})
	require.Equal(t, limitstatus.ErrNoLister.Error(), got[0].Error)
	require.Equal(t, 2, got[0].Waiting, "the waiters are known without the store")
}

func TestCutBoundsAKey(t *testing.T) {
	t.Parallel()
	long := fmt.Sprintf("%0256d", 7)
	require.Equal(t, `"`+long[:limitstatus.ShownKey]+`"…`, limitstatus.Cut(long))
	require.Equal(t, `"a/b#c"`, limitstatus.Cut("a/b#c"))
}
