package leasetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// TestAcquireAbsent: a job with no record is acquired; the record returned and
// the one stored have the owner, ExpiresAt = Now+TTL, AcquiredAt = Now and a
// positive fence.
func TestAcquireAbsent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	// A caller's clock in another zone names the same instants.
	now := at(0).In(time.FixedZone("UTC+05:30", 5*3600+1800))
	got := f.acquire("a", 30*time.Second, now, 0)
	requireSame(t, got, f.inspect())
}

// TestAcquireReleased: a released lease is acquired at once by another owner,
// long before the released holder's expiry, with a greater fence.
func TestAcquireReleased(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	first := f.acquire("a", time.Hour, at(0), 0)
	require.NoError(t, f.release("a", first.Fence))

	second := f.acquire("b", time.Minute, at(time.Second), 0)
	require.Greater(t, second.Fence, first.Fence)
	requireSame(t, second, f.inspect())
}

// TestAcquireContended: on a live lease held by another owner, Acquire returns a
// *HeldError matching ErrHeld whose holder is the live record (owner,
// expiry, fence, acquisition time), and writes nothing.
func TestAcquireContended(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	held := f.acquire("a", 30*time.Second, at(0), 0)

	for _, now := range []time.Time{at(0), at(10 * time.Second), held.ExpiresAt.Add(-time.Nanosecond)} {
		holder := f.acquireHeld("b", time.Minute, now, 0)
		requireSame(t, held, holder)
		requireSame(t, held, f.inspect())
	}
	// The error names the holder for an operator.
	_, err := f.store.Acquire(f.ctx, lease.AcquireParams{Job: f.job, Owner: "c", TTL: time.Minute, Now: at(time.Second)})
	require.ErrorContains(t, err, `"a"`)
	require.ErrorContains(t, err, fmt.Sprint(held.Fence))
}

// TestAcquireExpiredTakeover: a lease is taken over exactly when the acquirer's
// Now reaches the holder's ExpiresAt+Skew, and not a nanosecond before. The
// taker gets a greater fence; the old holder can neither renew nor release.
func TestAcquireExpiredTakeover(t *testing.T, h Harness) {
	t.Parallel()
	const ttl = 10 * time.Second
	cases := []struct {
		skew     time.Duration
		offset   time.Duration // Now - (ExpiresAt+Skew)
		takeover bool
	}{
		{0, -time.Nanosecond, false},
		{0, 0, true},
		{0, time.Nanosecond, true},
		{0, 24 * time.Hour, true},
		{2 * time.Second, -time.Nanosecond, false},
		{2 * time.Second, 0, true},
		{2 * time.Second, time.Hour, true},
		{time.Nanosecond, -time.Nanosecond, false},
		{time.Nanosecond, 0, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("skew=%s/offset=%s", c.skew, c.offset), func(t *testing.T) {
			t.Parallel()
			f := setup(t, h)
			old := f.acquire("a", ttl, at(0), 0)
			now := old.ExpiresAt.Add(c.skew + c.offset)
			if !c.takeover {
				requireSame(t, old, f.acquireHeld("b", ttl, now, c.skew))
				requireSame(t, old, f.inspect())
				return
			}
			taken := f.acquire("b", ttl, now, c.skew)
			require.Greater(t, taken.Fence, old.Fence)
			requireSame(t, taken, f.inspect())

			_, err := f.renew("a", old.Fence, ttl, now)
			require.ErrorIs(t, err, lease.ErrNotHolder)
			require.ErrorIs(t, f.release("a", old.Fence), lease.ErrNotHolder)
			requireSame(t, taken, f.inspect())
		})
	}
}

// TestAcquireSkewAllowance: the skew is the acquirer's allowance. The same
// record at the same Now is held for an acquirer allowing more skew than the
// time since expiry, and taken over by one allowing less.
func TestAcquireSkewAllowance(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	old := f.acquire("a", 10*time.Second, at(0), 0)
	now := old.ExpiresAt.Add(3 * time.Second) // expired by a's own clock

	requireSame(t, old, f.acquireHeld("b", time.Minute, now, 5*time.Second))
	requireSame(t, old, f.acquireHeld("c", time.Minute, now, 3*time.Second+time.Nanosecond))
	taken := f.acquire("c", time.Minute, now, 3*time.Second)
	require.Greater(t, taken.Fence, old.Fence)
}

// TestAcquireReentrant: an owner acquiring its own live lease succeeds, mints a
// new fence and resets ExpiresAt = Now+TTL (even when earlier than before)
// and AcquiredAt = Now. The previous fence is stale from then on.
func TestAcquireReentrant(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	first := f.acquire("a", 30*time.Second, at(0), 0)
	second := f.acquire("a", 5*time.Second, at(10*time.Second), 0)
	require.Greater(t, second.Fence, first.Fence)
	requireSame(t, second, f.inspect())

	_, err := f.renew("a", first.Fence, time.Minute, at(11*time.Second))
	require.ErrorIs(t, err, lease.ErrNotHolder)
	require.ErrorIs(t, f.release("a", first.Fence), lease.ErrNotHolder)
	requireSame(t, second, f.inspect())

	// The re-entrant lease is a lease like any other: it expires on its new
	// expiry, although the first one would still be live.
	taken := f.acquire("b", time.Minute, second.ExpiresAt, 0)
	require.Greater(t, taken.Fence, second.Fence)
}

// TestAcquireJobsIndependent: one job's lease neither blocks nor changes
// another's.
func TestAcquireJobsIndependent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	g := &fixture{t: t, ctx: f.ctx, store: f.store, job: uniqueJob(t)}

	a := f.acquire("a", time.Minute, at(0), 0)
	b := g.acquire("b", time.Minute, at(0), 0)
	require.NoError(t, g.release("b", b.Fence))
	requireSame(t, a, f.inspect())
	requireFreeRecord(t, g.inspect(), g.job, b.Fence)
	requireSame(t, a, f.acquireHeld("b", time.Minute, at(time.Second), 0))
}
