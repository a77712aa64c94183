package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// The compatibility checks below are run by an adapter's migration tests
// on records it wrote itself, as an older version of its schema did.
// They are not among the suite's cases: only the adapter can write an
// old record.

// RequireItemWithoutWait checks an item written before items kept a wait:
// the FAILED item key (attempt 2, error "upstream 503") reads with no
// wait and no next attempt (the compatibility rule), keeps its error, and
// takes a note afterwards.
func RequireItemWithoutWait(t *testing.T, s interface {
	ledger.Store
	ledger.WaitNoter
}, key ledger.ItemKey) {
	t.Helper()
	it, err := s.GetItem(t.Context(), key)
	require.NoError(t, err)
	require.Equal(t, ledger.ItemWait{}, it.Wait)
	_, ok := it.NextAttempt()
	require.False(t, ok, "a record without a wait shows no next attempt")
	require.Equal(t, "upstream 503", it.Error)

	next := key.Run.Nominal.Add(time.Hour)
	it, err = s.NoteWait(t.Context(), ledger.NoteWaitParams{Key: key, Wait: ledger.ItemWait{At: next}, Attempt: 2, Now: key.Run.Nominal.Add(time.Minute)})
	require.NoError(t, err)
	w, ok := it.NextAttempt()
	require.True(t, ok)
	require.True(t, next.Equal(w.At))
}

// RequireRunWithoutTrace checks a run written before runs kept a trace
// id: job's run at nominal, in its fan-out at fence 3, reads with no
// trace id (not known: the compatibility rule), keeps none when resumed,
// and its next generation takes the opener's.
func RequireRunWithoutTrace(t *testing.T, s ledger.Store, job string, nominal time.Time) {
	t.Helper()
	run, err := s.GetRun(t.Context(), job, nominal)
	require.NoError(t, err)
	require.Empty(t, run.TraceID)
	require.EqualValues(t, 3, run.OpenFence)

	const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	run, out, err := s.OpenRun(t.Context(), ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 4, TraceID: tid, Now: nominal.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, out)
	require.Empty(t, run.TraceID, "a resume does not give a trace id to a generation opened without one")
	run, _, err = s.OpenRun(t.Context(), ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 5, Force: true, TraceID: tid, Now: nominal.Add(2 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 2, run.ID.Generation)
	require.Equal(t, tid, run.TraceID)
}
