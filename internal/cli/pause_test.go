package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/coordinator"
)

func TestPauseResume(t *testing.T) {
	t.Parallel()
	testPauseResume(t, newSQLiteFixture(t))
}

// testPauseResume: a paused job's ticks are skipped and recorded, visible
// in status; replays and run --once are refused (exit 1) unless forced;
// resuming runs the next tick and leaves the skipped ones skipped.
func testPauseResume(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	_, err := f.eng.Trigger(ctx, fx.Name, f.tick(0), false) // the job's first run
	require.NoError(t, err)

	pause := func(args ...string) map[string]any {
		t.Helper()
		code, out, errOut := f.main(append(args, "--job", fx.Name, "--json")...)
		require.Equal(t, ExitOK, code, errOut)
		var rep map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		return rep
	}
	rep := pause("pause", "--reason", "provider outage")
	require.Equal(t, true, rep["changed"])
	require.Equal(t, true, rep["pause"].(map[string]any)["paused"])
	rep = pause("pause")
	require.Equal(t, false, rep["changed"], "pausing a paused job changes nothing")
	require.Equal(t, "provider outage", rep["pause"].(map[string]any)["reason"])

	// The schedule's tick while paused, twice (a duplicate trigger).
	var nominal time.Time
	for range 2 {
		sum, err := f.eng.Trigger(ctx, fx.Name, time.Now(), false)
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomePaused, sum.Outcome)
		nominal = sum.Nominal
	}
	code, _, errOut := f.main("replay", "tick", "--at", rfc(nominal))
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "job fx is paused")

	status := func() statusReport {
		t.Helper()
		code, out, errOut := f.main("status", "--json")
		require.Equal(t, ExitOK, code, errOut)
		var rep statusReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		return rep
	}
	st := status()
	require.NotNil(t, st.Pause)
	require.True(t, st.Pause.Paused)
	require.EqualValues(t, 1, st.Pause.Skipped, "a duplicate trigger counts once")
	require.Equal(t, nominal, st.Pause.LastSkipped.UTC())
	require.Contains(t, st.Gaps, tickGap{Tick: nominal, Reason: "skipped (paused)"})
	code, out, _ := f.main("status")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "PAUSED since")
	require.Contains(t, out, "provider outage; 1 tick(s) skipped, the latest "+rfc(nominal))

	rep = pause("resume")
	require.Equal(t, true, rep["changed"])
	st = status()
	require.False(t, st.Pause.Paused)
	require.NotNil(t, st.Pause.Until)
	require.Contains(t, st.Gaps, tickGap{Tick: nominal, Reason: "skipped (paused)"}, "skipped ticks stay listed after resuming")
	sum, err := f.eng.Trigger(ctx, fx.Name, time.Now(), false)
	require.NoError(t, err)
	require.NotEqual(t, coordinator.OutcomePaused, sum.Outcome, "a resumed job runs")
	rep = pause("resume")
	require.Equal(t, false, rep["changed"])
}
