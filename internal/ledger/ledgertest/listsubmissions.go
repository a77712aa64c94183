package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// SubmissionListerStore is a ledger store that lists submissions.
type SubmissionListerStore interface {
	ledger.Store
	ledger.SubmissionLister
}

// RunListSubmissions checks ledger.SubmissionLister on the stores
// newStore makes: a job's submissions are listed, one current run per
// dedupe key, newest opened first (a forced generation counts as opened
// when it opens), within the limit; not the job's ticks, not another
// job's submissions, even one whose name starts with the job's.
func RunListSubmissions(t *testing.T, newStore func(t *testing.T) SubmissionListerStore) {
	t.Helper()
	job := uniqueJob()
	other := job + "-x" // a longer name with the same start
	ctx := context.Background()
	l := newStore(t)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	open := func(job, sub string, d time.Duration, force bool) ledger.Run {
		t.Helper()
		r, out, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: job, Submission: sub, Nominal: t0, Fence: 1, Force: force, Now: t0.Add(d)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		return r
	}
	none, err := l.ListSubmissions(ctx, ledger.ListRunsParams{Job: job})
	require.NoError(t, err)
	require.Empty(t, none)

	a := open(job, "a", time.Second, false)
	open(job, "b", 2*time.Second, false)
	open(job, "c", 3*time.Second, false)
	open(other, "d", 4*time.Second, false)
	_, _, err = l.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Now: t0.Add(5 * time.Second)}) // a tick
	require.NoError(t, err)

	ids := func(runs []ledger.Run) []string {
		var out []string
		for _, r := range runs {
			out = append(out, r.ID.String())
		}
		return out
	}
	got, err := l.ListSubmissions(ctx, ledger.ListRunsParams{Job: job})
	require.NoError(t, err)
	require.Equal(t, []string{job + "+c#1", job + "+b#1", job + "+a#1"}, ids(got), "newest opened first; no tick, no other job's")
	require.Equal(t, ledger.RunFanningOut, got[0].State)

	// Generation 2 of a: listed once, first.
	_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: a.ID, Fence: 1, Cursor: 1, Done: true, Now: t0.Add(6 * time.Second)})
	require.NoError(t, err)
	_, err = l.FinishRun(ctx, ledger.FinishRunParams{ID: a.ID, Succeeded: 1, Now: t0.Add(7 * time.Second)})
	require.NoError(t, err)
	open(job, "a", 8*time.Second, true)
	got, err = l.ListSubmissions(ctx, ledger.ListRunsParams{Job: job, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{job + "+a#2", job + "+c#1"}, ids(got))

	got, err = l.ListSubmissions(ctx, ledger.ListRunsParams{Job: other})
	require.NoError(t, err)
	require.Equal(t, []string{other + "+d#1"}, ids(got))
}
