package leasetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// RenewExtends: the holder renews with its owner and fence before expiry;
// ExpiresAt becomes Now+TTL (later or earlier than before), owner, fence and
// AcquiredAt stay, and the renewed expiry is what others contend with.
func RenewExtends(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	f := setup(t, newStore)
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

// RenewNotHolder: Renew returns ErrNotHolder when the owner or the fence is
// not the record's (wrong owner, wrong fence, a fence made stale by a
// re-entrant acquisition, a released lease, a lease taken over, no record),
// and changes nothing.
func RenewNotHolder(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	notHolderCases(t, newStore, func(f *fixture, owner string, fence int64, now time.Time) error {
		got, err := f.renew(owner, fence, time.Minute, now)
		if err == nil {
			return fmt.Errorf("renewed: %+v", got)
		}
		return err
	})
}

// ReleaseNotHolder: Release returns ErrNotHolder in the same cases as
// Renew (including a lease already released), and changes nothing.
func ReleaseNotHolder(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	notHolderCases(t, newStore, func(f *fixture, owner string, fence int64, _ time.Time) error {
		return f.release(owner, fence)
	})
}

// notHolderCases runs op in every situation where the caller is not the
// holder, and checks ErrNotHolder and an unchanged record.
func notHolderCases(t *testing.T, newStore NewStoreFunc, op func(f *fixture, owner string, fence int64, now time.Time) error) {
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
			f := setup(t, newStore)
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

// RenewAfterExpiry: Renew has no skew allowance: at Now = ExpiresAt the
// lease is expired for its holder, and renewing returns ErrNotHolder and
// leaves the record as it was (another owner takes it over at that Now).
func RenewAfterExpiry(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	for _, offset := range []time.Duration{0, time.Nanosecond, time.Hour} {
		t.Run(fmt.Sprintf("offset=%s", offset), func(t *testing.T) {
			t.Parallel()
			f := setup(t, newStore)
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

// ReleaseFrees: the holder's release frees the lease (no owner, zero
// expiry) and keeps the fence; the lease is acquirable at once.
func ReleaseFrees(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	f := setup(t, newStore)
	held := f.acquire("a", time.Hour, at(0), 0)
	require.NoError(t, f.release("a", held.Fence))
	requireFreeRecord(t, f.inspect(), f.job, held.Fence)

	// The released holder may come back too, with a new fence.
	again := f.acquire("a", time.Hour, at(time.Second), 0)
	require.Greater(t, again.Fence, held.Fence)
}

// ReleaseExpired: releasing an expired lease that nobody took over
// succeeds, even after a refused renewal.
func ReleaseExpired(t *testing.T, newStore NewStoreFunc) {
	t.Parallel()
	f := setup(t, newStore)
	held := f.acquire("a", 10*time.Second, at(0), 0)
	_, err := f.renew("a", held.Fence, time.Minute, held.ExpiresAt.Add(time.Second))
	require.ErrorIs(t, err, lease.ErrNotHolder)

	require.NoError(t, f.release("a", held.Fence))
	requireFreeRecord(t, f.inspect(), f.job, held.Fence)
}
