package leasetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// pauserOf returns the store's Pauser, or skips: the ability is optional
// (an engine that lacks it says so by not implementing it).
func pauserOf(t *testing.T, s lease.Store) lease.Pauser {
	t.Helper()
	p, ok := lease.PauserOf(s)
	if !ok {
		t.Skipf("the store (%T) cannot pause jobs (lease.Pauser is optional)", s)
	}
	return p
}

func (f *fixture) setPause(p lease.Pauser, paused bool, by string, now time.Time) lease.Pause {
	f.t.Helper()
	got, err := p.SetPause(f.ctx, lease.SetPauseParams{Job: f.job, Paused: paused, By: by, Reason: "because " + by, Now: now})
	require.NoError(f.t, err, "set pause %t by %s", paused, by)
	require.Equal(f.t, f.job, got.Job)
	return got
}

func (f *fixture) pauseOf(p lease.Pauser) lease.Pause {
	f.t.Helper()
	got, err := p.PauseOf(f.ctx, f.job)
	require.NoError(f.t, err)
	return got
}

// TestPauseNeverPaused: a job never paused reads as not paused, with no
// error, and a skipped tick is refused (ErrNotPaused) without a record.
func TestPauseNeverPaused(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	require.Equal(t, lease.Pause{Job: f.job}, f.pauseOf(p))
	_, err := p.RecordSkipped(f.ctx, f.job, at(time.Minute))
	require.ErrorIs(t, err, lease.ErrNotPaused)
	require.Equal(t, lease.Pause{Job: f.job}, f.pauseOf(p), "a refused skip records nothing")
}

// TestPauseAndResume: pausing stores who, why and since when; resuming
// keeps the pause's window and count; pausing again starts a new one.
func TestPauseAndResume(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	got := f.setPause(p, true, "alice", at(0))
	want := lease.Pause{Job: f.job, Paused: true, Since: at(0), By: "alice", Reason: "because alice"}
	require.Equal(t, want, got)
	require.Equal(t, want, f.pauseOf(p))

	for i := 1; i <= 2; i++ {
		got, err := p.RecordSkipped(f.ctx, f.job, at(time.Duration(i)*time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, i, got.Skipped)
		require.Equal(t, at(time.Duration(i)*time.Minute), got.LastSkipped)
	}

	got = f.setPause(p, false, "bob", at(3*time.Minute))
	want = lease.Pause{Job: f.job, Since: at(0), Until: at(3 * time.Minute), By: "bob", Reason: "because bob", Skipped: 2, LastSkipped: at(2 * time.Minute)}
	require.Equal(t, want, got)
	require.Equal(t, want, f.pauseOf(p))
	_, err := p.RecordSkipped(f.ctx, f.job, at(4*time.Minute))
	require.ErrorIs(t, err, lease.ErrNotPaused, "a resumed job runs its ticks")
	require.Equal(t, want, f.pauseOf(p))

	got = f.setPause(p, true, "carol", at(5*time.Minute))
	require.Equal(t, lease.Pause{Job: f.job, Paused: true, Since: at(5 * time.Minute), By: "carol", Reason: "because carol"}, got,
		"a new pause starts a new window and count")
}

// TestPauseIdempotent: pausing a paused job, or resuming one that is not
// paused, changes nothing.
func TestPauseIdempotent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	resumed := f.setPause(p, false, "nobody", at(0))
	require.Equal(t, lease.Pause{Job: f.job}, resumed, "resuming a job never paused")
	first := f.setPause(p, true, "alice", at(time.Minute))
	_, err := p.RecordSkipped(f.ctx, f.job, at(2*time.Minute))
	require.NoError(t, err)
	first.Skipped, first.LastSkipped = 1, at(2*time.Minute)
	again := f.setPause(p, true, "bob", at(3*time.Minute))
	require.Equal(t, first, again, "pausing again keeps the first pause")
}

// TestPauseSkipCountsTicksOnce: the same tick skipped twice (duplicate
// triggers), or an older tick after a newer one, counts once.
func TestPauseSkipCountsTicksOnce(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	f.setPause(p, true, "alice", at(0))
	for _, d := range []time.Duration{time.Minute, time.Minute, 2 * time.Minute, time.Minute} {
		_, err := p.RecordSkipped(f.ctx, f.job, at(d))
		require.NoError(t, err)
	}
	got := f.pauseOf(p)
	require.EqualValues(t, 2, got.Skipped)
	require.Equal(t, at(2*time.Minute), got.LastSkipped)
}

// TestPauseConcurrentSkips: coordinators in several processes skipping
// distinct ticks at once: each counts.
func TestPauseConcurrentSkips(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	f.setPause(p, true, "alice", at(0))
	const ticks = 8
	var wg sync.WaitGroup
	errs := make(chan error, ticks)
	for i := range ticks {
		wg.Go(func() {
			_, err := p.RecordSkipped(f.ctx, f.job, at(time.Duration(i+1)*time.Minute))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Ticks landing out of order count once each only when newer than the
	// last counted: at least one, at most all of them.
	got := f.pauseOf(p)
	require.GreaterOrEqual(t, got.Skipped, int64(1))
	require.LessOrEqual(t, got.Skipped, int64(ticks))
	require.Equal(t, at(ticks*time.Minute), got.LastSkipped, "the newest tick is the last skipped")
}

// TestPauseJobsIndependent: pausing one job leaves the others running.
func TestPauseJobsIndependent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	other := &fixture{t: t, ctx: f.ctx, store: f.store, job: f.job + "-other"}
	f.setPause(p, true, "alice", at(0))
	require.False(t, other.pauseOf(p).Paused)
	_, err := p.RecordSkipped(f.ctx, other.job, at(time.Minute))
	require.ErrorIs(t, err, lease.ErrNotPaused)
	// The pause is not the lease: the job's lease still works.
	f.acquire("owner", time.Minute, at(0), 0)
}

// TestPauseInvalid: an empty job is an error.
func TestPauseInvalid(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	p := pauserOf(t, f.store)
	_, err := p.SetPause(f.ctx, lease.SetPauseParams{Paused: true, By: "x", Now: at(0)})
	require.Error(t, err, fmt.Sprintf("%T accepted an empty job", p))
	_, err = p.RecordSkipped(f.ctx, "", at(0))
	require.Error(t, err)
}
