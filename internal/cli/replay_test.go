package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// fast are the flags that make replays quick in tests.
var fast = []string{"--rate", "1000"}

func TestReplayRangeRunsOnlyTicksNotDone(t *testing.T) {
	t.Parallel()
	testBackfillRunsOnlyTicksNotDone(t, newSQLiteFixture(t))
}

func testBackfillRunsOnlyTicksNotDone(t *testing.T, f *opsFixture) {
	ctx := t.Context()

	// Tick 1 is done already.
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(1)))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	before := f.items(f.run(1, 1))
	require.Len(t, before, 8)

	// The range 0..3 runs ticks 0, 2 and 3 only.
	args := append([]string{"replay", "range", "--from", rfc(f.tick(0)), "--to", rfc(f.tick(4))}, fast...)
	code, out, errOut = f.main(args...)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "4 ticks in range; 1 already done, 0 left alone (--overlap buffer), 3 to run")
	require.Contains(t, out, "fired 3 ticks: 3 complete, 0 partial, 0 not settled")
	require.Contains(t, errOut, "backfill: 3/3 ticks, 24/24 items")

	require.Equal(t, before, f.items(f.run(1, 1)), "the tick already done was not touched")
	for _, i := range []int{0, 2, 3} {
		run, err := f.b.Ledger.GetRun(ctx, fx.Name, f.tick(i))
		require.NoError(t, err)
		require.Equal(t, f.run(i, 1), run.ID)
		require.Equal(t, ledger.RunComplete, run.State)
		for name, it := range f.items(run.ID) {
			require.Equal(t, 1, it.Attempt, "%s %s", run.ID, name)
		}
	}

	// Resumable: again, nothing left to run.
	code, out, errOut = f.main(args...)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "4 already done")
	require.Contains(t, out, "nothing to do")
}

func TestReplayRangeDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx := t.Context()
	code, _, errOut := f.main("replay", "tick", "--at", rfc(f.tick(2)))
	require.Equal(t, ExitOK, code, errOut)
	// An interrupted fan-out at tick 3.
	_, _, err := f.b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: fx.Name, Nominal: f.tick(3), Fence: 1, Now: time.Now()})
	require.NoError(t, err)

	for _, tc := range []struct {
		overlap string
		actions []string
	}{
		{"buffer", []string{actionRun, actionRun, actionDone, actionResume}},
		{"skip", []string{actionRun, actionRun, actionDone, actionExists}},
	} {
		code, out, errOut := f.main("replay", "range", "--from", rfc(f.tick(0)), "--to", rfc(f.tick(4)), "--dry-run", "--overlap", tc.overlap)
		require.Equal(t, ExitOK, code, errOut)
		for i, a := range tc.actions {
			require.Regexp(t, `(?m)^`+rfc(f.tick(i))+`\s+.*\s`+a+`$`, out, tc.overlap)
		}
		require.Contains(t, out, "nothing changed")
	}
	runs, err := f.b.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: fx.Name})
	require.NoError(t, err)
	require.Len(t, runs, 2, "dry runs opened no run")
}

func TestReplayRangeOverlapSkipLeavesExistingRuns(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx := t.Context()
	_, _, err := f.b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: fx.Name, Nominal: f.tick(1), Fence: 1, Now: time.Now()})
	require.NoError(t, err)

	args := append([]string{"replay", "range", "--from", rfc(f.tick(0)), "--to", rfc(f.tick(3))}, fast...)
	code, out, errOut := f.main(append(args, "--overlap", "skip")...)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "1 left alone (--overlap skip), 2 to run")
	run, err := f.b.Ledger.GetRun(ctx, fx.Name, f.tick(1))
	require.NoError(t, err)
	require.NotEqual(t, ledger.RunFanningOut, run.State, "skip did not fire the tick, but the coordinator resumed its interrupted run")
	require.Equal(t, 1, run.ID.Generation)

	// allow finds nothing left to run but waits for it to settle.
	code, out, errOut = f.main(append(args, "--overlap", "allow")...)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Regexp(t, `\d already done, 0 left alone \(--overlap allow\), \d to run`, out)
	run, err = f.b.Ledger.GetRun(ctx, fx.Name, f.tick(1))
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 1, run.ID.Generation)
}

func TestReplayRangeRefusesBadRanges(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", rfc(f.tick(3)), "--to", rfc(f.tick(1))}, "inverted range: --to " + rfc(f.tick(1)) + " is before --from " + rfc(f.tick(3))},
		{[]string{"--from", rfc(f.tick(0)), "--to", future}, "--to " + future + " is in the future"},
		{[]string{"--from", rfc(f.tick(0)), "--to", rfc(f.tick(11)), "--max-ticks", "5"}, "11 ticks in [" + rfc(f.tick(0)) + ", " + rfc(f.tick(11)) + ")"},
		{[]string{"--from", "yesterday", "--to", rfc(f.tick(2))}, `--from: invalid RFC 3339 time: "yesterday"`},
		{[]string{"--to", rfc(f.tick(2))}, "--from is required"},
		{[]string{"--from", rfc(f.tick(0)), "--to", rfc(f.tick(2)), "--overlap", "queue"}, `--overlap "queue": want buffer, allow or skip`},
		{[]string{"--from", rfc(f.tick(0)), "--to", rfc(f.tick(2)), "--rate", "0"}, "--rate must be in (0, 1000]"},
		{[]string{"--from", rfc(f.tick(0)), "--to", rfc(f.tick(2)), "--wait=false"}, "--overlap buffer waits"},
		{[]string{"--from", rfc(f.tick(0)), "--to", rfc(f.tick(2)), "--job", "nope"}, `unknown job "nope"`},
	} {
		code, _, errOut := f.main(append([]string{"replay", "range"}, tc.args...)...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	runs, err := f.b.Ledger.ListRuns(t.Context(), ledger.ListRunsParams{Job: fx.Name})
	require.NoError(t, err)
	require.Empty(t, runs)
}

func TestReplayTick(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx := t.Context()
	at := f.tick(5).Add(25 * time.Second) // any time in the minute: the tick at or before it

	code, out, errOut := f.main("replay", "tick", "--at", rfc(at))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "tick "+rfc(f.tick(5)))
	require.Contains(t, out, "run "+f.run(5, 1).String()+": complete — 8 succeeded")
	first := f.items(f.run(5, 1))

	// Again: a no-op that says so.
	code, out, errOut = f.main("replay", "tick", "--at", rfc(at))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "nothing to do: the tick already ran (--force runs it again as generation 2)")
	require.Equal(t, first, f.items(f.run(5, 1)))

	// --force: the next generation, every item run again.
	code, out, errOut = f.main("replay", "tick", "--at", rfc(at), "--force")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "run "+f.run(5, 2).String()+" opened")
	run, err := f.b.Ledger.GetRun(ctx, fx.Name, f.tick(5))
	require.NoError(t, err)
	require.Equal(t, f.run(5, 2), run.ID)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Len(t, f.items(f.run(5, 2)), 8)
	require.Equal(t, first, f.items(f.run(5, 1)), "generation 1 is left as it was")

	// Bad and future times.
	code, _, errOut = f.main("replay", "tick", "--at", time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "is in the future")
	code, _, errOut = f.main("replay", "tick", "--at", "12:01")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `--at: invalid RFC 3339 time: "12:01"`)
	code, _, errOut = f.main("replay", "tick", "--at", "2026-11-21T12:01:00+23:59")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "offset beyond ±14:00")
	code, _, errOut = f.main("replay", "tick")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--at is required")
}

func TestReplayTickRefusedWhileLeaseHeld(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	arrangeStatus(t, f) // holds the lease as coordinator-x for 10 minutes
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(7)), "--lease-wait", "0s")
	require.Equal(t, ExitFailure, code, out)
	require.Contains(t, errOut, `the job's lease is held by "coordinator-x"`)
	_, err := f.b.Ledger.GetRun(t.Context(), fx.Name, f.tick(7))
	require.ErrorIs(t, err, ledger.ErrNotFound)

	// A backfill reports the ticks it could not run and asks to resume.
	code, out, errOut = f.main("replay", "range", "--from", rfc(f.tick(6)), "--to", rfc(f.tick(8)), "--rate", "1000", "--lease-wait", "0s")
	require.Equal(t, ExitFailure, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "not run: "+rfc(f.tick(6)))
	require.Contains(t, out, "not run: "+rfc(f.tick(7)))
	require.Contains(t, out, "run the same command again to resume")
}

func TestReplayItem(t *testing.T) {
	t.Parallel()
	testReplayItem(t, newSQLiteFixture(t))
}

// An early replay of a derived item whose inputs have not succeeded is
// refused with the reason (exit 2), rather than sent to be refused
// receive after receive into the dead-letter queue.
func TestReplayItemRefusesADerivedItemBeforeItsInputs(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)), "--consumers", "0", "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	id := f.run(0, 1)
	code, out, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "DXY", "--consumers", "0", "--wait=false")
	require.Equal(t, ExitUsage, code, "%s\n%s", out, errOut)
	require.Contains(t, errOut, "inputs not all succeeded (EURUSD not started")
	require.Contains(t, errOut, "fan-in enqueues it once they have")
	depth, err := queue.OpsOf(f.b.Work.(queue.Receiver)).Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, len(fx.Assets), depth.Total(), "no DXY message sent")
}

// A derived item whose input ended without success is not refused: its
// message is what cancels it (and what downstream of it) when fan-in's
// cancellation was lost, so replay item sends it, and the consumer
// cancels the item naming the input.
func TestReplayItemSendsADoomedDerivedItem(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx := t.Context()
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)), "--consumers", "0", "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	id := f.run(0, 1)
	_, err := f.b.Ledger.Cancel(ctx, ledger.CancelParams{Key: ledger.ItemKey{Run: id, Asset: "EURUSD"}, Reason: "test", Now: time.Now()})
	require.NoError(t, err)
	code, out, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "DXY", "--consumers", "0", "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	depth, err := queue.OpsOf(f.b.Work.(queue.Receiver)).Depth(ctx)
	require.NoError(t, err)
	require.Equal(t, len(fx.Assets)+1, depth.Total(), "DXY's message sent")
	// DXY's own message cancels it, unless the redelivered EURUSD message
	// of the same batch re-runs the fan-in check first: either way DXY
	// ends CANCELLED naming its input, and its message is acknowledged.
	dxy := ledger.ItemKey{Run: id, Asset: fx.DXY}
	f.consumeOutcomes(func(o []consumer.MessageOutcome) bool {
		return handled(o, dxy, consumer.StatusCancelled) || handled(o, dxy, consumer.StatusDuplicate)
	})
	it := f.items(id)[fx.DXY]
	require.Equal(t, ledger.ItemCancelled, it.State)
	require.Contains(t, it.Error, "input EURUSD is CANCELLED")
}

func testReplayItem(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	id := f.run(0, 1)
	gen1 := f.items(id)

	// Terminal, no --force: nothing.
	code, out, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "EURUSD")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, id.String()+"/EURUSD is already SUCCEEDED (attempt 1); nothing to do")
	require.Equal(t, gen1, f.items(id))

	// --force: generation 2; EURUSD and DXY run again, the rest carried over.
	code, out, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "EURUSD", "--force")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "opened "+f.run(0, 2).String())
	require.Contains(t, out, "carried over 6 item(s) unchanged, re-running [EURUSD DXY]")
	require.Contains(t, out, f.run(0, 2).String()+"/DXY: SUCCEEDED")
	// The command returns once the replayed items ended; the run settles
	// with its last item, by the consumer that ended it, a moment later.
	require.Eventually(t, func() bool {
		run, err := f.b.Ledger.GetRun(ctx, fx.Name, f.tick(0))
		return err == nil && run.ID == f.run(0, 2) && run.State == ledger.RunComplete
	}, 10*time.Second, 10*time.Millisecond)
	gen2 := f.items(f.run(0, 2))
	require.Len(t, gen2, 8)
	for name, it := range gen2 {
		require.Equal(t, ledger.ItemSucceeded, it.State, name)
		require.JSONEq(t, string(gen1[name].Result), string(it.Result), "%s: same synthetic bar", name)
		carried := strings.Contains(it.Owner, "/replay#")
		require.Equal(t, name != "EURUSD" && name != "DXY", carried, "%s owned by %s", name, it.Owner)
	}

	// The old generation is superseded: refused with a pointer to the new one.
	code, _, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "EURUSD")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "superseded by "+f.run(0, 2).String())

	// Unknown asset and run.
	code, _, errOut = f.main("replay", "item", "--run", f.run(0, 2).String(), "--asset", "BTCUSD")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `unknown asset "BTCUSD"`)
	code, _, errOut = f.main("replay", "item", "--run", f.run(4, 1).String(), "--asset", "EURUSD")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "has no run")
}

func TestReplayItemStuckAndHeld(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx := t.Context()
	// Tick 0 fanned out, nothing consumed; then the work queue is drained
	// so that only replays deliver.
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)), "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	moved, err := queue.OpsOf(f.b.Work).MoveTo(ctx, f.b.DeadLetter, 0)
	require.NoError(t, err)
	require.Equal(t, 7, moved)
	id := f.run(0, 1)
	now := time.Now()
	stuck := ledger.ItemKey{Run: id, Asset: "USDJPY"}
	_, err = f.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: stuck, Owner: "dead-worker", LeaseUntil: now.Add(-time.Minute), Fence: 1, Now: now.Add(-2 * time.Minute)})
	require.NoError(t, err)
	live := ledger.ItemKey{Run: id, Asset: "USDCAD"}
	_, err = f.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: live, Owner: "busy-worker", LeaseUntil: now.Add(time.Hour), Fence: 1, Now: now})
	require.NoError(t, err)

	// Stuck: enqueued and taken over with the next attempt.
	code, out, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "USDJPY")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "was RUNNING (dead-worker, attempt 1); enqueued it again")
	it, err := f.b.Ledger.GetItem(ctx, stuck)
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, it.State)
	require.Equal(t, 2, it.Attempt)

	// Live claim: refused.
	code, _, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "USDCAD")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "refused: "+live.String()+" is RUNNING, claimed by busy-worker")
	it, err = f.b.Ledger.GetItem(ctx, live)
	require.NoError(t, err)
	require.Equal(t, "busy-worker", it.Owner)

	// A pending item: enqueued, runs.
	code, out, errOut = f.main("replay", "item", "--run", id.String(), "--asset", "XAUUSD")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "was PENDING; enqueued it again")
	require.Contains(t, out, id.String()+"/XAUUSD: SUCCEEDED, attempt 1")
}

func TestReplayBadUsage(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "everything"}, `unknown subcommand "everything"`},
		{[]string{"replay", "item", "--asset", "EURUSD"}, "--run is required"},
		{[]string{"replay", "item", "--run", "fx@2026-01-01T00:00:00Z#1"}, "--asset is required"},
		{[]string{"replay", "tick", "--at", rfc(f.tick(0)), "--consumers", "-3"}, "--consumers must not be negative"},
		{[]string{"replay", "tick", "--at", rfc(f.tick(0)), "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"replay", "tick", "--at", "0001-01-01T00:00:00Z"}, "year 1 outside 1970–2199"},
	} {
		code, _, errOut := f.main(tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

func TestReplayRangeInterruptedThenResumed(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Interrupt (as Ctrl-C would) once the first tick is complete.
		poll := time.NewTicker(5 * time.Millisecond)
		defer poll.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
			}
			if run, err := f.b.Ledger.GetRun(ctx, fx.Name, f.tick(0)); err == nil && run.State == ledger.RunComplete {
				cancel()
				return
			}
		}
	}()
	args := append([]string{"replay", "range", "--from", rfc(f.tick(0)), "--to", rfc(f.tick(5)), "--rate", "4", "--consumers", "2"}, f.flags...)
	var out, errOut bytes.Buffer
	code := Main(ctx, fx.Catalog(nil), args, &out, &errOut)
	require.Equal(t, ExitFailure, code, "%s\n%s", out.String(), errOut.String())
	require.Contains(t, out.String(), "run the same command again to resume")
	require.Contains(t, errOut.String(), "stopped:")

	runs, err := f.b.Ledger.ListRuns(t.Context(), ledger.ListRunsParams{Job: fx.Name})
	require.NoError(t, err)
	require.Less(t, len(runs), 5, "interrupted before the end")

	code, stdout, stderr := f.main(args[:len(args)-len(f.flags)]...)
	require.Equal(t, ExitOK, code, "%s\n%s", stdout, stderr)
	require.Regexp(t, `5 ticks in range; [1-4] already done`, stdout)
	for i := range 5 {
		run, err := f.b.Ledger.GetRun(t.Context(), fx.Name, f.tick(i))
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State, "tick %d", i)
		require.Equal(t, 1, run.ID.Generation)
	}
}

func TestJitterSpreadsWaits(t *testing.T) {
	t.Parallel()
	require.Zero(t, jitter(0))
	seen := map[time.Duration]bool{}
	for range 200 {
		d := jitter(time.Second)
		require.GreaterOrEqual(t, d, 500*time.Millisecond)
		require.LessOrEqual(t, d, time.Second)
		seen[d] = true
	}
	require.Greater(t, len(seen), 100, "waits are spread, not in lockstep")
}
