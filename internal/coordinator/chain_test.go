package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
)

// chainJobs are a job "up" ticking every minute, chained to "down" (three
// assets).
func chainJobs() []baton.Job {
	return []baton.Job{
		{Name: "up", Schedule: "rate(1 minute)", Assets: []string{"u1", "u2"}, Chains: []baton.Chain{{Job: "down"}}},
		{Name: "down", Schedule: "rate(1 hour)", Assets: []string{"d1", "d2", "d3"}},
	}
}

// sentTo counts the recorded messages of job's items.
func (s *sender) sentTo(t *testing.T, job string) int {
	t.Helper()
	n := 0
	for _, k := range s.keys(t) {
		if k.Run.Job == job {
			n++
		}
	}
	return n
}

// finishedByAnother is a ledger on which another settler finishes each
// run just before this one's FinishRun (with the same counts), as when two
// settlers end a run at once: this one's finds it finished (ErrTerminal).
type finishedByAnother struct{ ledger.Store }

func (l finishedByAnother) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	if _, err := l.Store.FinishRun(ctx, p); err != nil {
		return ledger.Run{}, err
	}
	return l.Store.FinishRun(ctx, p)
}

// A coordinator that settles a run sends its chained run's messages only
// when its own FinishRun finished the run: one that finds it finished by
// another settler (who sends them) sends nothing, so that the chained run
// is sent once, not once per settler.
func TestChainSentByTheSettlerThatFinishedItsParentOnly(t *testing.T) {
	t.Parallel()
	for _, won := range []bool{true, false} {
		b := setup(t, chainJobs()...)
		ctx := context.Background()
		sum, err := b.coordinator("c1").Run(ctx, coordinator.Trigger{Job: "up", At: t0})
		require.NoError(t, err)
		for _, a := range []string{"u1", "u2"} {
			finishItem(t, b, sum.Run, a, ledger.ItemSucceeded)
		}
		// A second trigger of the tick finds it fanned out and settles it.
		c2 := b.coordinator("c2")
		if !won {
			c2.Ledger = finishedByAnother{b.ledger}
		}
		b.clock.Advance(5 * time.Second)
		again, err := c2.Run(ctx, coordinator.Trigger{Job: "up", At: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomeAlreadyFannedOut, again.Outcome)
		run, err := ledger.GetRunOf(ctx, b.ledger, sum.Run)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State)
		if won {
			require.Equal(t, 3, b.queue.sentTo(t, "down"), "the settler that finished the parent sends the chained run")
		} else {
			require.Zero(t, b.queue.sentTo(t, "down"), "a settler that found the parent finished by another sends nothing")
		}
	}
}

// A finisher that stopped between its finish and its send loses no
// chained run: the job's next trigger past fanin.ChainGrace after the
// finish starts it (not within it: the finisher may be sending), once.
func TestChainOfAStoppedFinisherStartedByALaterTriggerPastTheGrace(t *testing.T) {
	t.Parallel()
	b := setup(t, chainJobs()...)
	ctx := context.Background()
	c := b.coordinator("c1")
	sum, err := c.Run(ctx, coordinator.Trigger{Job: "up", At: t0})
	require.NoError(t, err)
	for _, a := range []string{"u1", "u2"} {
		finishItem(t, b, sum.Run, a, ledger.ItemSucceeded)
	}
	// Finished by a settler that then stopped, before starting the chain.
	b.clock.Set(tick.Add(50 * time.Second))
	_, err = b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: sum.Run, Succeeded: 2, Now: b.clock.Now()})
	require.NoError(t, err)

	// The next tick, 10 s after the finish: within the grace, left to the
	// finisher.
	b.clock.Set(tick.Add(time.Minute))
	_, err = c.Run(ctx, coordinator.Trigger{Job: "up", At: b.clock.Now()})
	require.NoError(t, err)
	require.Zero(t, b.queue.sentTo(t, "down"), "within fanin.ChainGrace the finisher may still be sending")

	// The tick after, past the grace: started, once.
	require.Less(t, fanin.ChainGrace, 70*time.Second)
	for i := range 2 {
		b.clock.Set(tick.Add(time.Duration(2+i) * time.Minute))
		_, err = c.Run(ctx, coordinator.Trigger{Job: "up", At: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, 3, b.queue.sentTo(t, "down"), "trigger %d: the chained run, sent once", i)
	}
	down, err := ledger.GetRunOf(ctx, b.ledger, ledger.RunID{Job: "down", Submission: baton.ChainKey(sum.Run), Generation: 1})
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, down.State)
}

// A run finished by Settle or SettleRun (a local waiter, an operator's
// cancel, a replay) rather than by its last consumer still starts its
// chains: the consumer that then finds it finished leaves them to the
// finisher, so without this the chained run waits for the job's next
// trigger, which a one-shot run never makes.
func TestSettleThatFinishesARunStartsItsChains(t *testing.T) {
	t.Parallel()
	for _, byID := range []bool{false, true} {
		b := setup(t, chainJobs()...)
		ctx := context.Background()
		c := b.coordinator("c1")
		sum, err := c.Run(ctx, coordinator.Trigger{Job: "up", At: t0})
		require.NoError(t, err)
		for _, a := range []string{"u1", "u2"} {
			finishItem(t, b, sum.Run, a, ledger.ItemSucceeded)
		}
		for range 2 {
			var run ledger.Run
			if byID {
				run, err = c.SettleRun(ctx, sum.Run)
			} else {
				run, err = c.Settle(ctx, "up", sum.Nominal)
			}
			require.NoError(t, err)
			require.Equal(t, ledger.RunComplete, run.State)
			require.Equal(t, 3, b.queue.sentTo(t, "down"), "SettleRun %v: the chained run, sent once", byID)
		}
	}
}
