// This file holds the Resume group: what the local runtime does after a
// crash. The next trigger resumes the job's run left fanning out from its
// cursor and catches up the ticks missed while nothing ran, per the job's
// catch-up policy, and every run then settles by its consumers.
package jobmodeltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// TestResumeAndCatchUpAfterACrash leaves on the backend what a runtime
// killed mid fan-out leaves (a run five minutes old fanning out at cursor 3, its first three messages sent, and
// no run for the four ticks after it), then triggers the current tick
// once with consumers running, and requires every one of the six ticks to
// have a run that settles complete: the crashed one resumed, the four
// missed ones caught up (CatchUp window ten minutes), the current one.
func TestResumeAndCatchUpAfterACrash(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const jobName = "fxresume"
	ctx := t.Context()
	job := fx.Job(nil)
	job.Name = jobName
	job.CatchUp = baton.CatchUp{Window: 10 * time.Minute}
	job.Limits.ItemLease = 5 * time.Second
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)

	now := h.now().UTC()
	current := now.Truncate(time.Minute)
	crashed := current.Add(-5 * time.Minute)
	run, out, err := b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: jobName, Nominal: crashed, Fence: 1,
		Shards: fanin.Shards(len(jobspec.ItemNames(job))), Now: crashed.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)
	var sent []queue.Message
	for _, a := range job.Assets[:3] {
		sent = append(sent, message.New(ledger.ItemKey{Run: run.ID, Asset: a}, 1, false).QueueMessage())
	}
	_, err = queue.SendAll(ctx, b.Work, sent, nil)
	require.NoError(t, err)
	_, err = b.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 3, Now: crashed.Add(2 * time.Second)})
	require.NoError(t, err)

	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 2, BatchTimeout: 10 * time.Second, RetryDelay: 100 * time.Millisecond})
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(cctx) })
	defer func() { cancel(); wg.Wait() }()

	sum, err := eng.Trigger(ctx, jobName, now, false)
	require.NoError(t, err)
	require.Equal(t, current, sum.Nominal.UTC())

	for i := 5; i >= 0; i-- {
		nominal := current.Add(-time.Duration(i) * time.Minute)
		var r ledger.Run
		require.Eventually(t, func() bool { // on another goroutine: no require inside
			r, err = b.Ledger.GetRun(ctx, jobName, nominal)
			return err == nil && r.State.Finished()
		}, 30*time.Second, 20*time.Millisecond, "tick %s", nominal)
		require.Equal(t, ledger.RunComplete, r.State, "tick %s", nominal)
		require.Equal(t, 1, r.ID.Generation)
		require.Equal(t, len(jobspec.ItemNames(job)), r.Succeeded, "tick %s", nominal)
		if i == 5 {
			require.Equal(t, run.OpenedAt.UnixNano(), r.OpenedAt.UnixNano(), "the crashed run resumed, not opened again")
		}
	}
}
