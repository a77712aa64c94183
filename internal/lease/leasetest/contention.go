package leasetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// counterOf returns s as a lease.ContentionCounter, skipping the case when
// the store does not have the ability.
func counterOf(t *testing.T, s lease.Store) lease.ContentionCounter {
	t.Helper()
	c, ok := s.(lease.ContentionCounter)
	if !ok {
		t.Skipf("the store (%T) does not count refused acquisitions (lease.ContentionCounter is optional)", s)
	}
	return c
}

// refusal is one RecordContention call.
type refusal struct {
	holder lease.Lease
	now    time.Time
	ttl    time.Duration // the refused caller's TTL
}

// refusedBy returns a refusal by a holder named owner, at d after epoch.
func refusedBy(job, owner string, fence int64, d time.Duration) refusal {
	return refusal{
		holder: lease.Lease{Job: job, Owner: owner, Fence: fence, ExpiresAt: at(d + 30*time.Second), AcquiredAt: at(d - time.Second)},
		now:    at(d),
		ttl:    30 * time.Second,
	}
}

func recordRefusal(t *testing.T, c lease.ContentionCounter, job string, r refusal) {
	t.Helper()
	require.NoError(t, c.RecordContention(t.Context(), job, r.holder, r.now, r.ttl), "record a refusal of %s by %s", job, r.holder.Owner)
}

func contentionOf(t *testing.T, c lease.ContentionCounter, job string) lease.Contention {
	t.Helper()
	got, err := c.Contention(t.Context(), job)
	require.NoError(t, err, "contention of %s", job)
	require.Equal(t, job, got.Job, "job")
	require.Equal(t, job, got.Holder.Job, "job of the holder")
	return got
}

// requireLatest checks that got counts count refusals, the latest being
// latest: its time, and its holder's owner, fence and expiry.
func requireLatest(t *testing.T, got lease.Contention, count int64, latest refusal) {
	t.Helper()
	require.Equal(t, count, got.Count, "refusals counted")
	requireInstant(t, latest.now, got.Last, "latest refusal")
	require.Equal(t, latest.holder.Owner, got.Holder.Owner, "holder of the latest refusal")
	require.Equal(t, latest.holder.Fence, got.Holder.Fence, "fence of the latest refusal's holder")
	requireInstant(t, latest.holder.ExpiresAt, got.Holder.ExpiresAt, "expiry of the latest refusal's holder")
	require.Equal(t, latest.ttl, got.TTL, "TTL of the latest refused caller")
}

// TestContentionNeverRefused: a job never refused has a record of Count 0,
// no latest refusal and no holder, and no error. The store's own Acquire
// records nothing, refused or not: recording is Counting's business, so
// that a refusal is never counted twice.
func TestContentionNeverRefused(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	c := counterOf(t, f.store)
	got := contentionOf(t, c, f.job)
	require.Zero(t, got.Count)
	require.True(t, got.Last.IsZero(), "latest refusal of a job never refused: %s", got.Last)
	require.Empty(t, got.Holder.Owner, "holder of a job never refused")

	held := f.acquire("a", time.Minute, at(0), 0)
	f.acquireHeld("b", time.Minute, at(time.Second), 0)
	require.NoError(t, f.release("a", held.Fence))
	require.Zero(t, contentionOf(t, c, f.job).Count, "the store's own Acquire records no refusal")
}

// TestContentionCounts: every recorded refusal counts once; Last and
// Holder are those of the latest.
func TestContentionCounts(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	c := counterOf(t, f.store)
	refusals := []refusal{
		refusedBy(f.job, "a", 1, time.Second),
		refusedBy(f.job, "a", 1, 2*time.Second),
		refusedBy(f.job, "b", 4, time.Minute),
	}
	for i, r := range refusals {
		recordRefusal(t, c, f.job, r)
		requireLatest(t, contentionOf(t, c, f.job), int64(i+1), r)
	}
}

// TestContentionConcurrent: refusals recorded at once, as coordinators in
// several processes record them, all count. Last and Holder come from one
// and the same refusal.
func TestContentionConcurrent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	c := counterOf(t, f.store)
	const callers = 10
	refusals := make([]refusal, callers)
	for i := range refusals {
		refusals[i] = refusedBy(f.job, fmt.Sprintf("holder-%d", i), int64(i+1), time.Duration(i)*time.Millisecond)
	}
	start := make(chan struct{})
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i, r := range refusals {
		wg.Go(func() {
			<-start
			errs[i] = c.RecordContention(t.Context(), f.job, r.holder, r.now, r.ttl)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "caller %d", i)
	}

	got := contentionOf(t, c, f.job)
	require.EqualValues(t, callers, got.Count, "refusals from concurrent callers add up")
	var latest *refusal
	for i, r := range refusals {
		if r.holder.Owner == got.Holder.Owner {
			latest = &refusals[i]
		}
	}
	require.NotNil(t, latest, "holder %q is none of the recorded ones", got.Holder.Owner)
	requireLatest(t, got, callers, *latest)
	if h.Capabilities.LatestRefusalByClock {
		requireLatest(t, got, callers, refusals[callers-1])
	}
}

// TestContentionJobsIndependent: counts are per job.
func TestContentionJobsIndependent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	c := counterOf(t, f.store)
	other, never := uniqueJob(t), uniqueJob(t)
	mine := []refusal{refusedBy(f.job, "a", 3, time.Second), refusedBy(f.job, "a", 3, 2*time.Second)}
	theirs := refusedBy(other, "b", 9, time.Hour)
	recordRefusal(t, c, f.job, mine[0])
	recordRefusal(t, c, other, theirs)
	recordRefusal(t, c, f.job, mine[1])

	requireLatest(t, contentionOf(t, c, f.job), 2, mine[1])
	requireLatest(t, contentionOf(t, c, other), 1, theirs)
	require.Zero(t, contentionOf(t, c, never).Count)
}

// TestContentionLatestByClock: with Capabilities.LatestRefusalByClock,
// Last and Holder are the refusal with the latest now, whichever was
// recorded last (callers' clocks differ, and records cross on the way).
func TestContentionLatestByClock(t *testing.T, h Harness) {
	t.Parallel()
	if !h.Capabilities.LatestRefusalByClock {
		t.Skip("Capabilities.LatestRefusalByClock unset: the store keeps the refusal recorded last, not the latest by the callers' clocks")
	}
	f := setup(t, h)
	c := counterOf(t, f.store)
	late, early := refusedBy(f.job, "late", 2, 2*time.Second), refusedBy(f.job, "early", 1, time.Second)
	recordRefusal(t, c, f.job, late)
	recordRefusal(t, c, f.job, early)
	requireLatest(t, contentionOf(t, c, f.job), 2, late)
	same := refusedBy(f.job, "same", 3, 2*time.Second)
	recordRefusal(t, c, f.job, same)
	requireLatest(t, contentionOf(t, c, f.job), 3, same)
}

// TestContentionInvalid: a refusal of the empty job is an error, and no
// panic.
func TestContentionInvalid(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	c := counterOf(t, f.store)
	var err error
	require.NotPanics(t, func() {
		r := refusedBy("", "a", 1, time.Second)
		err = c.RecordContention(t.Context(), "", r.holder, r.now, r.ttl)
	})
	require.Error(t, err, "a refusal of the empty job")
}

// TestCounting: lease.Counting on the store records each refused Acquire,
// with the live holder and the refused caller's Now, and nothing else:
// neither a free, a re-entrant nor a takeover acquisition. The wrapped
// store still counts, and both see the same record.
func TestCounting(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	raw := counterOf(t, f.store)
	f.store = lease.Counting(f.store, nil)
	c, ok := f.store.(lease.ContentionCounter)
	require.True(t, ok, "lease.Counting keeps the ability")

	held := f.acquire("a", time.Minute, at(0), 0)
	require.Zero(t, contentionOf(t, c, f.job).Count, "a free acquisition")
	for i := 1; i <= 3; i++ {
		now := at(time.Duration(i) * time.Second)
		requireSame(t, held, f.acquireHeld("b", time.Minute, now, 0))
		requireLatest(t, contentionOf(t, c, f.job), int64(i), refusal{holder: held, now: now, ttl: time.Minute})
	}
	want := contentionOf(t, c, f.job)

	again := f.acquire("a", time.Minute, at(4*time.Second), 0)
	f.acquire("c", time.Minute, again.ExpiresAt, 0)
	requireLatest(t, contentionOf(t, c, f.job), 3, refusal{holder: held, now: want.Last, ttl: time.Minute})
	got := contentionOf(t, raw, f.job)
	requireLatest(t, got, 3, refusal{holder: held, now: want.Last, ttl: time.Minute})
	requireInstant(t, at(time.Second), got.StreakStart, "the streak starts at the first refusal")
}

// TestContentionStreak: refusals by one holder make one streak, which
// starts at the first of them; a refusal by another holder starts a new
// one. The streak escalates once it spans lease.EscalationCycles TTLs and
// stays escalated while refusals go on (the latest at most one TTL old).
func TestContentionStreak(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	c := counterOf(t, f.store)
	const ttl = 30 * time.Second
	first := refusedBy(f.job, "a", 1, time.Second)
	recordRefusal(t, c, f.job, first)
	got := contentionOf(t, c, f.job)
	requireInstant(t, first.now, got.StreakStart, "streak start")
	require.False(t, got.Escalated(first.now), "one refusal")

	// Just short of three cycles: not yet.
	short := refusedBy(f.job, "a", 1, time.Second+3*ttl-time.Nanosecond)
	recordRefusal(t, c, f.job, short)
	got = contentionOf(t, c, f.job)
	requireInstant(t, first.now, got.StreakStart, "the same holder continues the streak")
	require.Equal(t, 3*ttl-time.Nanosecond, got.Streak())
	require.False(t, got.Escalated(short.now), "a streak under three cycles")

	full := refusedBy(f.job, "a", 1, time.Second+3*ttl)
	recordRefusal(t, c, f.job, full)
	got = contentionOf(t, c, f.job)
	requireInstant(t, first.now, got.StreakStart, "streak start")
	require.True(t, got.Escalated(full.now), "three cycles of refusals by one holder")
	require.True(t, got.Escalated(full.now.Add(ttl)), "escalated while the latest refusal is within one TTL")
	require.False(t, got.Escalated(full.now.Add(ttl+time.Nanosecond)), "refusals stopped: no longer escalated")

	other := refusedBy(f.job, "b", 2, time.Second+4*ttl)
	recordRefusal(t, c, f.job, other)
	got = contentionOf(t, c, f.job)
	requireInstant(t, other.now, got.StreakStart, "another holder starts a new streak")
	require.False(t, got.Escalated(other.now), "a new streak")
	require.EqualValues(t, 4, got.Count, "the count goes on across streaks")
}
