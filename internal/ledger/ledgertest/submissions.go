package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// TestSubmissionRuns checks the runs of submissions (OpenRunParams.
// Submission): opened once per dedupe key (a second open finds it), read
// back by GetRun under TickOf's key with their RunID whole, advanced,
// finished and forced to a next generation like a tick's run, kept apart
// from the job's ticks (ListRuns lists ticks only) and from other keys;
// their items are keyed by the submission's run id.
func TestSubmissionRuns(t *testing.T, h Harness) {
	t.Parallel()
	b := setup(t, h)
	id := ledger.RunID{Job: b.job, Submission: "order-42", Generation: 1}
	now := at(time.Second)
	r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Submission: "order-42", Nominal: nominal, Fence: 3, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)
	require.Equal(t, id, r.ID, "the submission's run id, whatever Nominal says")

	_, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Submission: "order-42", Fence: 4, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, out, "the same key finds the same run")

	other, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Submission: "order-43", Fence: 4, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out, "another key is another run")
	require.Equal(t, "order-43", other.ID.Submission)

	got, err := ledger.GetRunOf(b.ctx, b.store, id)
	require.NoError(t, err)
	require.Equal(t, id, got.ID)
	require.Equal(t, int64(4), got.Fence)

	_, err = b.store.AdvanceRun(b.ctx, ledger.AdvanceRunParams{ID: id, Fence: 4, Cursor: 1, Done: true, Now: now})
	require.NoError(t, err)
	_, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Submission: "order-42", Fence: 5, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.AlreadyFannedOut, out, "a fanned-out submission is not opened again")

	key := ledger.ItemKey{Run: id, Asset: "a"}
	it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "w", LeaseUntil: at(time.Minute), Fence: 4, Now: now})
	require.NoError(t, err)
	require.Equal(t, key, it.Key)
	_, err = b.store.Complete(b.ctx, ledger.CompleteParams{Key: key, Owner: "w", Attempt: 1, Result: []byte("r"), Now: now})
	require.NoError(t, err)
	items, err := b.store.ListItems(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, key, items[0].Key)

	fin, err := b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: id, Succeeded: 1, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, fin.State)
	require.Equal(t, id, fin.ID)

	next, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Submission: "order-42", Fence: 6, Force: true, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)
	require.Equal(t, ledger.RunID{Job: b.job, Submission: "order-42", Generation: 2}, next.ID)

	// A tick of the job is another run; ListRuns lists ticks only.
	_, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 7, Now: now})
	require.NoError(t, err)
	runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.False(t, runs[0].ID.Submitted())
}

// TestListSubmissions checks the optional ledger.SubmissionLister: a
// job's submissions, one record per dedupe key (its current generation),
// the most recently updated first, at most Limit, and neither its ticks
// nor another job's submissions. Skipped for a store without it.
func TestListSubmissions(t *testing.T, h Harness) {
	t.Parallel()
	b := setup(t, h)
	lister, ok := b.store.(ledger.SubmissionLister)
	if !ok {
		t.Skip("the store does not list submissions (no ledger.SubmissionLister)")
	}
	open := func(job, key string, d time.Duration, force bool) {
		t.Helper()
		_, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: job, Submission: key, Nominal: nominal, Fence: 1, Force: force, Now: at(d)})
		require.NoError(t, err)
	}
	open(b.job, "a", time.Second, false)
	open(b.job, "b", 2*time.Second, false)
	open(b.job, "a", 3*time.Second, true) // a's generation 2, updated last
	open(b.job, "", time.Second, false)   // a tick
	open(b.job+"0", "c", time.Second, false)
	open(b.job+"-x", "d", time.Second, false)

	runs, err := lister.ListSubmissions(b.ctx, ledger.ListSubmissionsParams{Job: b.job})
	require.NoError(t, err)
	ids := make([]ledger.RunID, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	require.Equal(t, []ledger.RunID{
		{Job: b.job, Submission: "a", Generation: 2},
		{Job: b.job, Submission: "b", Generation: 1},
	}, ids)

	runs, err = lister.ListSubmissions(b.ctx, ledger.ListSubmissionsParams{Job: b.job, Limit: 1})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	runs, err = lister.ListSubmissions(b.ctx, ledger.ListSubmissionsParams{Job: b.job + "-none"})
	require.NoError(t, err)
	require.Empty(t, runs)
}
