package leasetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// TestRenewExtends: the holder renews with its owner and fence before expiry;
// ExpiresAt becomes Now+TTL (later or earlier than before), owner, fence and
// AcquiredAt stay, and the renewed expiry is what others contend with.
func TestRenewExtends(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	held := f.acquire("a", 10*time.Second, at(0), 0)

	renewed, err := f.renew("a", held.Fence, 20*time.Second, at(5*time.Second))
	require.NoError(t, err)
	requireHeldRecord(t, renewed, f.job, "a", at(25*time.Second), held.AcquiredAt)
	require.Equal(t, held.Fence, renewed.Fence)
	requireSame(t, renewed, f.inspect())

	// Past the first expiry, the renewed lease is still live.
	requireSame(t, renewed, f.acquireHeld("b", time.Minute, held.ExpiresAt, 0))

	// A renewal one nanosecond before expiry succeeds and may shorten.
	last := renewed.ExpiresAt.Add(-time.Nanosecond)
	shortened, err := f.renew("a", held.Fence, time.Second, last)
	require.NoError(t, err)
	requireHeldRecord(t, shortened, f.job, "a", last.Add(time.Second), held.AcquiredAt)
	requireSame(t, shortened, f.inspect())
}

// TestRenewNotHolder: Renew returns ErrNotHolder when the owner or the fence is
// not the record's (wrong owner, wrong fence, a fence made stale by a
// re-entrant acquisition, a released lease, a lease taken over, no record),
// and changes nothing.
func TestRenewNotHolder(t *testing.T, h Harness) {
	t.Parallel()
	notHolderCases(t, h, func(f *fixture, owner string, fence int64, now time.Time) error {
		got, err := f.renew(owner, fence, time.Minute, now)
		if err == nil {
			return fmt.Errorf("renewed: %+v", got)
		}
		return err
	})
}

// TestReleaseNotHolder: Release returns ErrNotHolder in the same cases as
// Renew (including a lease already released), and changes nothing.
func TestReleaseNotHolder(t *testing.T, h Harness) {
	t.Parallel()
	notHolderCases(t, h, func(f *fixture, owner string, fence int64, _ time.Time) error {
		return f.release(owner, fence)
	})
}

// notHolderCases runs op in every situation where the caller is not the
// holder, and checks ErrNotHolder and an unchanged record.
func notHolderCases(t *testing.T, h Harness, op func(f *fixture, owner string, fence int64, now time.Time) error) {
	t.Helper()
	const ttl = 30 * time.Second
	now := at(5 * time.Second) // before every expiry below
	cases := []struct {
		name string
		// arrangeFunc sets the record up and returns the owner and fence op uses.
		arrangeFunc func(f *fixture) (owner string, fence int64)
	}{
		{"wrong owner", func(f *fixture) (string, int64) {
			return "b", f.acquire("a", ttl, at(0), 0).Fence
		}},
		{"fence too high", func(f *fixture) (string, int64) {
			return "a", f.acquire("a", ttl, at(0), 0).Fence + 1
		}},
		{"fence too low", func(f *fixture) (string, int64) {
			return "a", f.acquire("a", ttl, at(0), 0).Fence - 1
		}},
		{"stale fence after re-entrant acquire", func(f *fixture) (string, int64) {
			old := f.acquire("a", ttl, at(0), 0)
			f.acquire("a", ttl, at(time.Second), 0)
			return "a", old.Fence
		}},
		{"released", func(f *fixture) (string, int64) {
			l := f.acquire("a", ttl, at(0), 0)
			require.NoError(f.t, f.release("a", l.Fence))
			return "a", l.Fence
		}},
		{"taken over", func(f *fixture) (string, int64) {
			old := f.acquire("a", time.Second, at(0), 0)
			f.acquire("b", ttl, old.ExpiresAt, 0)
			return "a", old.Fence
		}},
		{"no record", func(f *fixture) (string, int64) {
			return "a", 1
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, h)
			owner, fence := c.arrangeFunc(f)
			before, beforeErr := f.store.Inspect(f.ctx, f.job)

			require.ErrorIs(t, op(f, owner, fence, now), lease.ErrNotHolder)

			after, afterErr := f.store.Inspect(f.ctx, f.job)
			if beforeErr != nil {
				require.ErrorIs(t, beforeErr, lease.ErrNotFound)
				require.ErrorIs(t, afterErr, lease.ErrNotFound, "a failed call created %+v", after)
				return
			}
			require.NoError(t, afterErr)
			requireSame(t, before, after)
		})
	}
}

// TestRenewAfterExpiry: Renew has no skew allowance: at Now = ExpiresAt the
// lease is expired for its holder, and renewing returns ErrNotHolder and
// leaves the record as it was (another owner takes it over at that Now).
func TestRenewAfterExpiry(t *testing.T, h Harness) {
	t.Parallel()
	for _, offset := range []time.Duration{0, time.Nanosecond, time.Hour} {
		t.Run(fmt.Sprintf("offset=%s", offset), func(t *testing.T) {
			t.Parallel()
			f := setup(t, h)
			held := f.acquire("a", 10*time.Second, at(0), 0)
			now := held.ExpiresAt.Add(offset)

			_, err := f.renew("a", held.Fence, time.Minute, now)
			require.ErrorIs(t, err, lease.ErrNotHolder)
			requireSame(t, held, f.inspect())

			taken := f.acquire("b", time.Minute, now, 0)
			require.Greater(t, taken.Fence, held.Fence)
		})
	}
}

// TestReleaseFrees: the holder's release frees the lease (no owner, zero
// expiry) and keeps the fence; the lease is acquirable at once.
func TestReleaseFrees(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	held := f.acquire("a", time.Hour, at(0), 0)
	require.NoError(t, f.release("a", held.Fence))
	requireFreeRecord(t, f.inspect(), f.job, held.Fence)

	// The released holder may come back too, with a new fence.
	again := f.acquire("a", time.Hour, at(time.Second), 0)
	require.Greater(t, again.Fence, held.Fence)
}

// TestReleaseExpired: releasing an expired lease that nobody took over
// succeeds, even after a refused renewal.
func TestReleaseExpired(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	held := f.acquire("a", 10*time.Second, at(0), 0)
	_, err := f.renew("a", held.Fence, time.Minute, held.ExpiresAt.Add(time.Second))
	require.ErrorIs(t, err, lease.ErrNotHolder)

	require.NoError(t, f.release("a", held.Fence))
	requireFreeRecord(t, f.inspect(), f.job, held.Fence)
}

// TestReleaseWithinSkew: Release takes no clock and no allowance. While
// the lease is live for an acquirer allowing skew (before the holder's
// expiry, at it, or past it by less than the allowance), that acquirer is
// refused; the holder's release still succeeds, frees the lease and keeps
// the fence, and the same acquirer, at the same Now and with the same
// allowance, takes the lease at once with a greater fence.
func TestReleaseWithinSkew(t *testing.T, h Harness) {
	t.Parallel()
	const (
		ttl  = 10 * time.Second
		skew = 2 * time.Second
	)
	for _, offset := range []time.Duration{-time.Nanosecond, 0, time.Second, skew - time.Nanosecond} {
		t.Run(fmt.Sprintf("offset=%s", offset), func(t *testing.T) {
			t.Parallel()
			f := setup(t, h)
			held := f.acquire("a", ttl, at(0), 0)
			now := held.ExpiresAt.Add(offset) // Now - ExpiresAt

			requireSame(t, held, f.acquireHeld("b", ttl, now, skew))
			require.NoError(t, f.release("a", held.Fence), "release within the allowance of another acquirer")
			requireFreeRecord(t, f.inspect(), f.job, held.Fence)
			require.ErrorIs(t, f.release("a", held.Fence), lease.ErrNotHolder, "released once")

			taken := f.acquire("b", ttl, now, skew)
			require.Greater(t, taken.Fence, held.Fence)
			requireSame(t, taken, f.inspect())
		})
	}
}
