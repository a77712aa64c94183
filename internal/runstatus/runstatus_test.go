package runstatus

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func item(asset string, state ledger.ItemState, attempt int) ledger.Item {
	return ledger.Item{Key: ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: t0, Generation: 1}, Asset: asset}, State: state, Attempt: attempt}
}

// An item never attempted (FAILED at attempt 0, noted waiting on a limit)
// and an expected item without a record are PENDING; every other item
// counts in its state; every state is there, 0 when empty.
func TestCountItems(t *testing.T) {
	t.Parallel()
	items := []ledger.Item{
		item("a", ledger.ItemSucceeded, 1),
		item("b", ledger.ItemFailed, 0), // waiting on a limit before its first attempt
		item("c", ledger.ItemFailed, 2), // waiting for its retry
		item("d", ledger.ItemRunning, 1),
		item("e", ledger.ItemDead, 3),
	}
	require.Equal(t, map[string]int{"PENDING": 3, "RUNNING": 1, "FAILED": 1, "SUCCEEDED": 1, "DEAD": 1, "CANCELLED": 0},
		CountItems(items, []string{"a", "b", "c", "d", "e", "f", "derived"}))
	require.Equal(t, map[string]int{"PENDING": 0, "RUNNING": 0, "FAILED": 0, "SUCCEEDED": 0, "DEAD": 0, "CANCELLED": 0}, CountItems(nil, nil))
	require.Equal(t, []string{"PENDING", "RUNNING", "FAILED", "SUCCEEDED", "DEAD", "CANCELLED"}, States)
}

// An item is stuck when it is RUNNING and its lease ended more than the
// skew allowance ago: at the allowance's end exactly, it is.
func TestStuck(t *testing.T) {
	t.Parallel()
	skew := 2 * time.Second
	running := item("a", ledger.ItemRunning, 1)
	running.LeaseUntil = t0
	for _, c := range []struct {
		it   ledger.Item
		now  time.Time
		want bool
	}{
		{running, t0.Add(-time.Second), false},
		{running, t0.Add(skew - time.Nanosecond), false},
		{running, t0.Add(skew), true},
		{running, t0.Add(time.Hour), true},
		{func() ledger.Item { it := running; it.State = ledger.ItemFailed; return it }(), t0.Add(time.Hour), false},
		{func() ledger.Item { it := running; it.State = ledger.ItemSucceeded; return it }(), t0.Add(time.Hour), false},
	} {
		require.Equal(t, c.want, Stuck(c.it, skew, c.now), "%s at %s", c.it.State, c.now.Sub(t0))
	}
}

// A lease is free without an owner, held until its expiry plus the skew
// allowance, expired from then on.
func TestLeaseState(t *testing.T) {
	t.Parallel()
	skew := time.Second
	l := lease.Lease{Job: "fx", Owner: "coordinator-1", Fence: 3, ExpiresAt: t0}
	require.Equal(t, "held", LeaseState(l, skew, t0))
	require.Equal(t, "held", LeaseState(l, skew, t0.Add(skew-time.Nanosecond)))
	require.Equal(t, "expired", LeaseState(l, skew, t0.Add(skew)))
	require.Equal(t, "expired", LeaseState(l, 0, t0))
	l.Owner = ""
	require.Equal(t, "free", LeaseState(l, skew, t0.Add(-time.Hour)))
}

// The schedule's ticks without a run among the listed runs' span, newest
// first, with why: paused, the catch-up policy's, or missed.
func TestTickGaps(t *testing.T) {
	t.Parallel()
	run := func(m int) ledger.Run {
		return ledger.Run{ID: ledger.RunID{Job: "fx", Nominal: t0.Add(time.Duration(m) * time.Minute), Generation: 1}}
	}
	runs := []ledger.Run{run(6), run(0)} // newest first
	now := t0.Add(8*time.Minute + 10*time.Second)
	j := fx.Job(nil)
	reasons := func(gaps []TickGap) map[int]string {
		out := map[int]string{}
		for _, g := range gaps {
			out[int(g.Tick.Sub(t0)/time.Minute)] = g.Reason
		}
		return out
	}
	require.Equal(t, map[int]string{1: "missed", 2: "missed", 3: "missed", 4: "missed", 5: "missed", 7: "missed", 8: "missed"},
		reasons(TickGaps(j, runs, nil, now)))
	require.Equal(t, t0.Add(8*time.Minute), TickGaps(j, runs, nil, now)[0].Tick, "newest first")

	// Paused from 12:01:30 to 12:03:10: the ticks 2 and 3 were skipped.
	until := t0.Add(3*time.Minute + 10*time.Second)
	pause := &Pause{Since: t0.Add(90 * time.Second), Until: &until}
	got := reasons(TickGaps(j, runs, pause, now))
	require.Equal(t, "skipped (paused)", got[2])
	require.Equal(t, "skipped (paused)", got[3])
	require.Equal(t, "missed", got[4])

	j.CatchUp = baton.CatchUp{Window: 2 * time.Minute, Skip: true}
	got = reasons(TickGaps(j, runs, nil, now))
	require.Equal(t, []string{"missed", "skipped (catch-up policy)", "skipped (catch-up policy)"}, []string{got[5], got[7], got[8]})
	j.CatchUp.Skip = false
	require.Equal(t, "catch-up pending", reasons(TickGaps(j, runs, nil, now))[7])

	require.Nil(t, TickGaps(j, nil, nil, now), "no run listed: no span")
	j.Schedule = ""
	require.Nil(t, TickGaps(j, runs, nil, now), "no schedule: no tick")
}

// The waiting items are listed soonest first (then by key), at most
// MaxWaiting, with how many are left out; each says what it waits on.
func TestWaiting(t *testing.T) {
	t.Parallel()
	var items []ledger.Item
	for i := range MaxWaiting + 3 {
		it := item(fmt.Sprintf("a%02d", i), ledger.ItemFailed, 1)
		it.Wait = ledger.ItemWait{At: t0.Add(time.Duration(MaxWaiting+3-i) * time.Second), Attempt: 1}
		items = append(items, it)
	}
	items[0].Wait.At = t0.Add(time.Second) // a tie with the last: broken by key
	limited := item("z", ledger.ItemFailed, 0)
	limited.Wait = ledger.ItemWait{At: t0, Limit: "provider", Key: "tenant-1"}
	items = append(items, limited)

	got, more := Waiting(items)
	require.Len(t, got, MaxWaiting)
	require.Equal(t, 4, more)
	require.Equal(t, limited.Key.String(), got[0].Key)
	require.Equal(t, &WaitingOn{Kind: "limit", Limit: "provider", Key: "tenant-1"}, got[0].WaitingOn)
	require.Equal(t, `limit provider key "tenant-1"`, got[0].WaitingOn.Text())
	require.Equal(t, items[0].Key.String(), got[1].Key)
	require.Equal(t, items[len(items)-2].Key.String(), got[2].Key)
	require.Equal(t, "retry delay", got[1].WaitingOn.Text())
	require.Equal(t, "-", (*WaitingOn)(nil).Text())
}
