package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// open opens the bundle's run, which must be new, with fence at now.
func (b *bundle) open(t *testing.T, fence int64, now time.Time) ledger.Run {
	t.Helper()
	r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: fence, Now: now})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)
	return r
}

// advance records progress of generation gen, which must succeed.
func (b *bundle) advance(t *testing.T, gen int, fence int64, cursor int, done bool, now time.Time) ledger.Run {
	t.Helper()
	r, err := b.store.AdvanceRun(b.ctx, ledger.AdvanceRunParams{ID: b.runID(gen), Fence: fence, Cursor: cursor, Done: done, Now: now})
	require.NoError(t, err)
	return r
}

// finish finishes generation gen with the counts, which must succeed.
func (b *bundle) finish(t *testing.T, gen, succeeded, dead, cancelled int, now time.Time) ledger.Run {
	t.Helper()
	r, err := b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: b.runID(gen), Succeeded: succeeded, Dead: dead, Cancelled: cancelled, Now: now})
	require.NoError(t, err)
	return r
}

// runIn brings the bundle's run, generation 1 with fence 5, into state
// (fanning_out with cursor 2; fanned_out with total 3; complete or partial
// after that) and returns the stored record.
func (b *bundle) runIn(t *testing.T, state ledger.RunState) ledger.Run {
	t.Helper()
	b.open(t, 5, at(time.Second))
	r := b.advance(t, 1, 5, 2, false, at(2*time.Second))
	switch state {
	case ledger.RunFanningOut:
		return r
	case ledger.RunFannedOut:
		return b.advance(t, 1, 5, 3, true, at(3*time.Second))
	case ledger.RunComplete:
		b.advance(t, 1, 5, 3, true, at(3*time.Second))
		return b.finish(t, 1, 3, 0, 0, at(4*time.Second))
	case ledger.RunPartial:
		b.advance(t, 1, 5, 3, true, at(3*time.Second))
		return b.finish(t, 1, 1, 1, 1, at(4*time.Second))
	}
	t.Fatalf("runIn: unknown state %q", state)
	return ledger.Run{}
}

var allRunStates = []ledger.RunState{ledger.RunFanningOut, ledger.RunFannedOut, ledger.RunComplete, ledger.RunPartial}

// TestOpenRun: OpenRun's every outcome, from each state a run can be in.
func TestOpenRun(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("AbsentOpensGeneration1", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		now := at(1500 * time.Millisecond)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 3, Now: now})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		want := ledger.Run{ID: b.runID(1), State: ledger.RunFanningOut, Fence: 3, OpenFence: 3, Shards: 1, OpenedAt: now, UpdatedAt: now}
		requireRun(t, want, r)
		requireRun(t, want, b.getRun(t))
	})

	t.Run("FanningOutResumesAndTakesHigherFence", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		before := b.runIn(t, ledger.RunFanningOut)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 8, Now: at(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		want := before
		want.Fence = 8
		want.UpdatedAt = r.UpdatedAt // a resume may or may not touch UpdatedAt
		requireRun(t, want, r)
		requireRun(t, r, b.getRun(t))
		require.Equal(t, before.OpenFence, r.OpenFence, "a resume keeps the fence that opened the generation")
		require.NotZero(t, r.OpenFence)
	})

	t.Run("OpenFenceIsTheOpenersAcrossGenerations", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 4, Now: at(time.Second)})
		require.NoError(t, err)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 6, Now: at(2 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Equal(t, int64(4), r.OpenFence, "resumed by fence 6")
		r, err = b.store.AdvanceRun(b.ctx, ledger.AdvanceRunParams{ID: r.ID, Fence: 7, Cursor: 1, Done: true, Now: at(3 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, int64(4), r.OpenFence, "advanced by fence 7")
		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 11, Force: true, Now: at(4 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		require.Equal(t, int64(11), r.OpenFence, "generation 2 opened by fence 11")
		require.Equal(t, int64(11), b.getRun(t).OpenFence)
	})

	t.Run("DigestIsTheOpenersAcrossGenerations", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 4, Digest: "v1:aa", Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		require.Equal(t, "v1:aa", r.Digest)
		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 6, Digest: "v1:bb", Now: at(2 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Equal(t, "v1:aa", r.Digest, "a resume keeps the digest the generation was opened with")
		require.Equal(t, "v1:aa", b.getRun(t).Digest)
		r, err = b.store.AdvanceRun(b.ctx, ledger.AdvanceRunParams{ID: r.ID, Fence: 6, Cursor: 1, Done: true, Now: at(3 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, "v1:aa", r.Digest)
		r, err = b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: r.ID, Succeeded: 1, Now: at(4 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, "v1:aa", r.Digest)
		r, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 9, Force: true, Digest: "v1:cc", Now: at(5 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, "v1:cc", r.Digest, "generation 2 has its own")
		r, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 10, Force: true, Now: at(6 * time.Second)})
		require.NoError(t, err)
		require.Empty(t, r.Digest, "generation 3 was opened without one")
		require.Empty(t, b.getRun(t).Digest)
		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 11, Digest: "v1:dd", Now: at(7 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Empty(t, r.Digest, "a resume does not give a digest to a generation opened without one")
		require.Empty(t, b.getRun(t).Digest)
	})

	t.Run("TraceIDIsTheOpenersAcrossGenerations", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		const t1, t2, t3 = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7a3ce929d0e0e4736"
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 4, TraceID: t1, Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		require.Equal(t, t1, r.TraceID)
		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 6, TraceID: t2, Now: at(2 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Equal(t, t1, r.TraceID, "a resume keeps the trace of the generation's opener")
		require.Equal(t, t1, b.getRun(t).TraceID)
		r, err = b.store.AdvanceRun(b.ctx, ledger.AdvanceRunParams{ID: r.ID, Fence: 6, Cursor: 1, Done: true, Now: at(3 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, t1, r.TraceID)
		r, err = b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: r.ID, Succeeded: 1, Now: at(4 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, t1, r.TraceID)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, t1, runs[0].TraceID, "listed with the run")
		r, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 9, Force: true, TraceID: t3, Now: at(5 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, t3, r.TraceID, "generation 2 has its own")
		r, _, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 10, Force: true, Now: at(6 * time.Second)})
		require.NoError(t, err)
		require.Empty(t, r.TraceID, "generation 3 was opened untraced")
		require.Empty(t, b.getRun(t).TraceID)
		r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 11, TraceID: t2, Now: at(7 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Empty(t, r.TraceID, "a resume does not give a trace to a generation opened without one")
		require.Empty(t, b.getRun(t).TraceID)
	})

	t.Run("FanningOutResumesWithSameFence", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		before := b.runIn(t, ledger.RunFanningOut)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: before.Fence, Now: at(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out)
		require.Equal(t, 2, r.Cursor, "the caller continues from the stored cursor")
		want := before
		want.UpdatedAt = r.UpdatedAt
		requireRun(t, want, r)
	})

	t.Run("FanningOutWithHigherStoredFenceConflicts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		before := b.runIn(t, ledger.RunFanningOut)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: before.Fence - 1, Now: at(time.Minute)})
		require.ErrorIs(t, err, ledger.ErrConflict)
		require.NotEqual(t, ledger.Opened, out)
		requireRun(t, before, r, "the record that made the condition fail")
		requireRun(t, before, b.getRun(t), "nothing written")
	})

	for _, state := range []ledger.RunState{ledger.RunFannedOut, ledger.RunComplete, ledger.RunPartial} {
		t.Run("AlreadyFannedOutWhen_"+string(state), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			before := b.runIn(t, state)
			r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: before.Fence + 10, Now: at(time.Hour)})
			require.NoError(t, err)
			require.Equal(t, ledger.AlreadyFannedOut, out)
			requireRun(t, before, r)
			requireRun(t, before, b.getRun(t), "nothing written, not even the fence")
		})
	}

	for _, state := range allRunStates {
		t.Run("ForceOpensNextGenerationWhen_"+string(state), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			b.runIn(t, state)
			now := at(time.Hour)
			r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 9, Force: true, Now: now})
			require.NoError(t, err)
			require.Equal(t, ledger.Opened, out)
			want := ledger.Run{ID: b.runID(2), State: ledger.RunFanningOut, Fence: 9, OpenFence: 9, Shards: 1, OpenedAt: now, UpdatedAt: now}
			requireRun(t, want, r, "a new generation starts from scratch")
			requireRun(t, want, b.getRun(t))

			r, out, err = b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 10, Force: true, Now: now.Add(time.Second)})
			require.NoError(t, err)
			require.Equal(t, ledger.Opened, out)
			require.Equal(t, b.runID(3), r.ID)
		})
	}

	t.Run("ForceOnAbsentOpensGeneration1", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		now := at(time.Second)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 1, Force: true, Now: now})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		requireRun(t, ledger.Run{ID: b.runID(1), State: ledger.RunFanningOut, Fence: 1, OpenFence: 1, Shards: 1, OpenedAt: now, UpdatedAt: now}, r)
	})

	t.Run("TicksAreSeparate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		b.runIn(t, ledger.RunComplete)
		next := nominal.Add(time.Minute)
		r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: next, Fence: 6, Now: at(2 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, ledger.Opened, out)
		require.Equal(t, ledger.RunID{Job: b.job, Nominal: next, Generation: 1}, runView(r).ID)
	})
}

// TestAdvanceRun: AdvanceRun records the fan-out's cursor and fence, and
// its errors.
func TestAdvanceRun(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("RecordsCursorAndFence", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		opened := b.open(t, 2, at(time.Second))

		r := b.advance(t, 1, 2, 3, false, at(2*time.Second))
		want := opened
		want.Cursor, want.UpdatedAt = 3, at(2*time.Second)
		requireRun(t, want, r)
		requireRun(t, want, b.getRun(t))

		r = b.advance(t, 1, 2, 3, false, at(3*time.Second))
		require.Equal(t, 3, r.Cursor, "an equal cursor is not below the stored one")

		r = b.advance(t, 1, 4, 7, false, at(4*time.Second))
		want.Cursor, want.Fence, want.UpdatedAt = 7, 4, at(4*time.Second)
		requireRun(t, want, r, "a higher fence is recorded")
		requireRun(t, want, b.getRun(t))
	})

	t.Run("DoneSetsFannedOutAndTotal", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		opened := b.open(t, 2, at(time.Second))
		b.advance(t, 1, 2, 4, false, at(2*time.Second))
		r := b.advance(t, 1, 2, 6, true, at(3*time.Second))
		want := opened
		want.State, want.Cursor, want.Total, want.UpdatedAt = ledger.RunFannedOut, 6, 6, at(3*time.Second)
		requireRun(t, want, r)
		requireRun(t, want, b.getRun(t))
	})

	conflicts := []struct {
		name       string
		state      ledger.RunState
		paramsFunc func(b *bundle) ledger.AdvanceRunParams
	}{
		{"OtherGeneration", ledger.RunFanningOut, func(b *bundle) ledger.AdvanceRunParams {
			return ledger.AdvanceRunParams{ID: b.runID(2), Fence: 5, Cursor: 3}
		}},
		{"StaleFence", ledger.RunFanningOut, func(b *bundle) ledger.AdvanceRunParams {
			return ledger.AdvanceRunParams{ID: b.runID(1), Fence: 4, Cursor: 3}
		}},
		{"CursorBelowStored", ledger.RunFanningOut, func(b *bundle) ledger.AdvanceRunParams {
			return ledger.AdvanceRunParams{ID: b.runID(1), Fence: 5, Cursor: 1}
		}},
		{"FannedOut", ledger.RunFannedOut, func(b *bundle) ledger.AdvanceRunParams {
			return ledger.AdvanceRunParams{ID: b.runID(1), Fence: 5, Cursor: 3, Done: true}
		}},
		{"Complete", ledger.RunComplete, func(b *bundle) ledger.AdvanceRunParams {
			return ledger.AdvanceRunParams{ID: b.runID(1), Fence: 5, Cursor: 3}
		}},
		{"Partial", ledger.RunPartial, func(b *bundle) ledger.AdvanceRunParams {
			return ledger.AdvanceRunParams{ID: b.runID(1), Fence: 6, Cursor: 4}
		}},
	}
	for _, c := range conflicts {
		t.Run("ConflictWhen_"+c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			before := b.runIn(t, c.state)
			p := c.paramsFunc(b)
			p.Now = at(time.Hour)
			r, err := b.store.AdvanceRun(b.ctx, p)
			require.ErrorIs(t, err, ledger.ErrConflict)
			requireRun(t, before, r, "the record that made the condition fail")
			requireRun(t, before, b.getRun(t), "nothing written")
		})
	}

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, err := b.store.AdvanceRun(b.ctx, ledger.AdvanceRunParams{ID: b.runID(1), Fence: 1, Cursor: 1, Now: at(time.Second)})
		require.ErrorIs(t, err, ledger.ErrNotFound)
		_, err = b.store.GetRun(b.ctx, b.job, nominal)
		require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written")
	})
}

// TestFinishRun: FinishRun's verdict from the item counts, and its errors.
func TestFinishRun(t *testing.T, h Harness) {
	t.Parallel()
	verdicts := []struct {
		name                       string
		succeeded, dead, cancelled int
		want                       ledger.RunState
	}{
		{"AllSucceeded", 3, 0, 0, ledger.RunComplete},
		{"SomeDead", 2, 1, 0, ledger.RunPartial},
		{"SomeCancelled", 2, 0, 1, ledger.RunPartial},
		{"DeadAndCancelled", 0, 2, 1, ledger.RunPartial},
	}
	for _, v := range verdicts {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			before := b.runIn(t, ledger.RunFannedOut)
			now := at(time.Minute)
			r := b.finish(t, 1, v.succeeded, v.dead, v.cancelled, now)
			want := before
			want.State, want.FinishedAt, want.UpdatedAt = v.want, now, now
			want.Succeeded, want.Dead, want.Cancelled = v.succeeded, v.dead, v.cancelled
			requireRun(t, want, r)
			requireRun(t, want, b.getRun(t))
		})
	}

	for _, state := range []ledger.RunState{ledger.RunComplete, ledger.RunPartial} {
		t.Run("TerminalWhen_"+string(state), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			before := b.runIn(t, state)
			r, err := b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: b.runID(1), Succeeded: 3, Now: at(time.Hour)})
			require.ErrorIs(t, err, ledger.ErrTerminal)
			requireRun(t, before, r, "the record that made the condition fail")
			requireRun(t, before, b.getRun(t), "nothing written")
		})
	}

	t.Run("ConflictWhenFanningOut", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		before := b.runIn(t, ledger.RunFanningOut)
		_, err := b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: b.runID(1), Succeeded: 2, Now: at(time.Hour)})
		require.ErrorIs(t, err, ledger.ErrConflict)
		requireRun(t, before, b.getRun(t), "nothing written")
	})

	t.Run("ConflictWhenOtherGeneration", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		before := b.runIn(t, ledger.RunFannedOut)
		_, err := b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: b.runID(2), Succeeded: 3, Now: at(time.Hour)})
		require.ErrorIs(t, err, ledger.ErrConflict)
		requireRun(t, before, b.getRun(t), "nothing written")
	})

	t.Run("ConflictWhenReplacedByForcedGeneration", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		b.runIn(t, ledger.RunFannedOut)
		_, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 6, Force: true, Now: at(time.Minute)})
		require.NoError(t, err)
		b.advance(t, 2, 6, 3, true, at(2*time.Minute))
		before := b.getRun(t)
		_, err = b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: b.runID(1), Succeeded: 3, Now: at(time.Hour)})
		require.ErrorIs(t, err, ledger.ErrConflict, "generation 1 no longer is the tick's run")
		requireRun(t, before, b.getRun(t), "nothing written")
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, err := b.store.FinishRun(b.ctx, ledger.FinishRunParams{ID: b.runID(1), Succeeded: 1, Now: at(time.Second)})
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})
}

// TestGetRun: GetRun returns the latest generation of a tick, or
// ErrNotFound.
func TestGetRun(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, err := b.store.GetRun(b.ctx, b.job, nominal)
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})

	t.Run("OtherTickNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		b.open(t, 1, at(time.Second))
		_, err := b.store.GetRun(b.ctx, b.job, nominal.Add(time.Minute))
		require.ErrorIs(t, err, ledger.ErrNotFound)
		_, err = b.store.GetRun(b.ctx, uniqueJob(), nominal)
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})

	t.Run("ReturnsCurrentGeneration", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		b.runIn(t, ledger.RunComplete)
		forced, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 7, Force: true, Now: at(time.Hour)})
		require.NoError(t, err)
		requireRun(t, forced, b.getRun(t))
		require.Equal(t, 2, b.getRun(t).ID.Generation)
	})
}

// TestListRuns: ListRuns returns the runs of one job, newest first, up to
// its limit.
func TestListRuns(t *testing.T, h Harness) {
	t.Parallel()
	// openTicks opens a run of job for each tick nominal+minutes.
	openTicks := func(t *testing.T, b *bundle, job string, minutes ...int) {
		t.Helper()
		for _, m := range minutes {
			_, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{
				Job: job, Nominal: nominal.Add(time.Duration(m) * time.Minute), Fence: 1, Now: at(time.Hour),
			})
			require.NoError(t, err)
			require.Equal(t, ledger.Opened, out)
		}
	}
	// nominals and minutes turn runs and minute offsets into comparable
	// lists of nominal times.
	nominals := func(runs []ledger.Run) []time.Time {
		var out []time.Time
		for _, r := range runs {
			out = append(out, r.ID.Nominal.UTC())
		}
		return out
	}
	minutes := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, nominal.Add(time.Duration(m)*time.Minute))
		}
		return out
	}

	t.Run("NewestFirstOfJobOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		openTicks(t, b, b.job, 1, 3, 0, 2)
		openTicks(t, b, uniqueJob(), 0, 1, 4)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
		require.NoError(t, err)
		require.Equal(t, minutes(3, 2, 1, 0), nominals(runs))
		for _, r := range runs {
			require.Equal(t, b.job, r.ID.Job)
			requireRun(t, r, mustGetRun(t, b, r.ID.Nominal), "listed records are the stored ones")
		}
	})

	t.Run("Limit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		openTicks(t, b, b.job, 0, 1, 2, 3)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, minutes(3, 2), nominals(runs))
	})

	t.Run("DefaultLimitIs20", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		ms := make([]int, 22)
		for i := range ms {
			ms[i] = i
		}
		openTicks(t, b, b.job, ms...)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
		require.NoError(t, err)
		require.Len(t, runs, 20)
		require.Equal(t, nominal.Add(21*time.Minute), runs[0].ID.Nominal.UTC())
		require.Equal(t, nominal.Add(2*time.Minute), runs[19].ID.Nominal.UTC())
	})

	t.Run("BeforeIsExclusive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		openTicks(t, b, b.job, 0, 1, 2, 3)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job, Before: nominal.Add(2 * time.Minute)})
		require.NoError(t, err)
		require.Equal(t, minutes(1, 0), nominals(runs))

		runs, err = b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job, Before: nominal.Add(3 * time.Minute), Limit: 1})
		require.NoError(t, err)
		require.Equal(t, minutes(2), nominals(runs), "pages: Before the last listed, Limit")
	})

	t.Run("ListsCurrentGeneration", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		b.runIn(t, ledger.RunComplete)
		_, _, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 7, Force: true, Now: at(time.Hour)})
		require.NoError(t, err)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		requireRun(t, b.getRun(t), runs[0])
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		runs, err := b.store.ListRuns(b.ctx, ledger.ListRunsParams{Job: b.job})
		require.NoError(t, err)
		require.Empty(t, runs)
	})
}

func mustGetRun(t *testing.T, b *bundle, nom time.Time) ledger.Run {
	t.Helper()
	r, err := b.store.GetRun(b.ctx, b.job, nom)
	require.NoError(t, err)
	return r
}
