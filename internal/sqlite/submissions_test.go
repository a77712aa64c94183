package sqlite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

func TestListSubmissions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := NewLedgerStore(openLedgerTestDB(t))
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	open := func(job, key string, at time.Time) {
		t.Helper()
		_, _, err := s.OpenRun(ctx, ledger.OpenRunParams{Job: job, Submission: key, Nominal: at, Fence: 1, Now: at})
		require.NoError(t, err)
	}
	open("fx", "a", now)
	open("fx", "b", now.Add(time.Second))
	open("fx", "b", now.Add(time.Second)) // resumed: still one record
	open("fx2", "c", now)                 // another job whose name extends fx's
	open("fx", "", now)                   // a tick, not a submission
	open("fx-a", "d", now)

	runs, err := s.ListSubmissions(ctx, ledger.ListSubmissionsParams{Job: "fx"})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, ledger.RunID{Job: "fx", Submission: "b", Generation: 1}, runs[0].ID)
	require.Equal(t, ledger.RunID{Job: "fx", Submission: "a", Generation: 1}, runs[1].ID)

	runs, err = s.ListSubmissions(ctx, ledger.ListSubmissionsParams{Job: "fx", Limit: 1})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	runs, err = s.ListSubmissions(ctx, ledger.ListSubmissionsParams{Job: "nope"})
	require.NoError(t, err)
	require.Empty(t, runs)
}
