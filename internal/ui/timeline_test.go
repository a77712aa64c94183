package ui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
)

func TestTimeline(t *testing.T) {
	t.Parallel()
	j := baton.Job{
		Name: "report", Schedule: "rate(1 minute)", Assets: []string{"sales", "costs", "fx", "sales2"},
		// Listed out of order: the timeline puts margin before margin_usd.
		Derived: []baton.Derived{{Name: "margin_usd", Inputs: []string{"margin", "fx"}}, {Name: "margin", Inputs: []string{"sales", "costs"}}},
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	id := ledger.RunID{Job: j.Name, Nominal: t0, Generation: 1}
	item := func(asset string, state ledger.ItemState, attempt, first, last, done int) ledger.Item {
		it := ledger.Item{Key: ledger.ItemKey{Run: id, Asset: asset}, State: state, Attempt: attempt, CreatedAt: at(first), StartedAt: at(last)}
		if done >= 0 {
			it.FinishedAt = at(done)
		}
		return it
	}
	run := ledger.Run{ID: id, State: ledger.RunFannedOut, OpenedAt: at(100)}
	items := []ledger.Item{
		item("sales", ledger.ItemSucceeded, 1, 110, 110, 300),
		item("costs", ledger.ItemSucceeded, 3, 120, 700, 900), // two attempts before the last
		item("fx", ledger.ItemRunning, 1, 130, 130, -1),
		item("margin", ledger.ItemSucceeded, 1, 950, 950, 1000),
		{Key: ledger.ItemKey{Run: id, Asset: "sales2"}, State: ledger.ItemFailed, Attempt: 1, CreatedAt: at(150), StartedAt: at(150), UpdatedAt: at(250), Error: "503"},
	}
	tl := buildTimeline(j, run, items, at(1100))
	require.True(t, tl.Live)
	require.Equal(t, at(0), tl.Start, "a run opened right after its tick starts at the tick")
	require.Equal(t, at(1100), tl.End, "in flight: up to now")

	names := make([]string, len(tl.Rows))
	for i, r := range tl.Rows {
		names[i] = r.Asset
	}
	require.Equal(t, []string{"sales", "costs", "fx", "sales2", "margin", "margin_usd"}, names)

	rows := map[string]timelineRow{}
	for _, r := range tl.Rows {
		rows[r.Asset] = r
	}
	classes := func(r timelineRow) []string {
		var out []string
		for _, s := range r.Segments {
			out = append(out, s.Class)
		}
		return out
	}
	require.Equal(t, []string{"waiting", "succeeded"}, classes(rows["sales"]))
	require.Equal(t, []string{"waiting", "retried", "succeeded"}, classes(rows["costs"]))
	require.Equal(t, "attempts 1–2", rows["costs"].Segments[1].Label)
	require.Equal(t, []string{"waiting", "running"}, classes(rows["fx"]))
	require.Equal(t, []string{"waiting", "failed", "waiting"}, classes(rows["sales2"]), "a FAILED item's attempt ends when it failed; it waits for its retry since")
	require.InDelta(t, tl.x(at(250)), rows["sales2"].Segments[1].X+rows["sales2"].Segments[1].W, 0.01)
	require.InDelta(t, tl.x(at(1100)), rows["fx"].Segments[1].X+rows["fx"].Segments[1].W, 0.01, "a running item's bar ends at now")
	// A derived item is enqueued when its last input ended.
	require.Equal(t, at(900), rows["margin"].Enqueued)
	require.InDelta(t, tl.x(at(900)), rows["margin"].Segments[0].X, 0.01)
	// Its own input fx still runs: no enqueue yet, waiting until now.
	require.Equal(t, pendingState, rows["margin_usd"].State)
	require.Empty(t, rows["margin_usd"].Segments)
	for _, r := range tl.Rows {
		for _, s := range r.Segments {
			require.GreaterOrEqual(t, s.X, tlLabel, r.Asset)
			require.LessOrEqual(t, s.X+s.W, tl.Width, r.Asset)
		}
	}

	// Finished: bars end at the last end, nothing runs to now.
	run.State, run.FinishedAt = ledger.RunPartial, at(1000)
	items[2] = ledger.Item{Key: ledger.ItemKey{Run: id, Asset: "fx"}, State: ledger.ItemCancelled, FinishedAt: at(400), Error: "cancelled by ops"}
	tl = buildTimeline(j, run, items, at(60_000))
	require.False(t, tl.Live)
	require.Equal(t, at(1000), tl.End)
	for _, r := range tl.Rows {
		if r.Asset == "fx" {
			require.Equal(t, []string{"waiting", "cancelled"}, classes(r), "cancelled before a claim")
			require.Contains(t, r.Title, "cancelled by ops")
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost:8700": true, "LOCALHOST": true, "127.0.0.1:1": true, "127.9.9.9": true, "[::1]:8700": true,
		"evil.example": false, "evil.example:8700": false, "10.0.0.1:8700": false, "localhost.evil.example": false, "": false,
	} {
		require.Equal(t, want, loopbackHost(host), host)
	}
}
