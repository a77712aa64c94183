package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// TestInvalidParams: an empty job or owner, or a non-positive TTL, make every
// method return an error that is none of the sentinels, without a panic and
// without writing anything: an absent record stays absent, a held or free
// record stays as it was.
func TestInvalidParams(t *testing.T, h Harness) {
	t.Parallel()
	now := at(time.Second)
	calls := []struct {
		name     string
		callFunc func(f *fixture, fence int64) error
	}{
		{"acquire/empty owner", func(f *fixture, _ int64) error {
			_, err := f.store.Acquire(f.ctx, lease.AcquireParams{Job: f.job, TTL: time.Minute, Now: now})
			return err
		}},
		{"acquire/zero ttl", func(f *fixture, _ int64) error {
			_, err := f.store.Acquire(f.ctx, lease.AcquireParams{Job: f.job, Owner: "b", Now: now})
			return err
		}},
		{"acquire/negative ttl", func(f *fixture, _ int64) error {
			_, err := f.store.Acquire(f.ctx, lease.AcquireParams{Job: f.job, Owner: "b", TTL: -time.Minute, Now: now})
			return err
		}},
		{"acquire/empty job", func(f *fixture, _ int64) error {
			_, err := f.store.Acquire(f.ctx, lease.AcquireParams{Owner: "b", TTL: time.Minute, Now: now})
			return err
		}},
		{"renew/empty owner", func(f *fixture, fence int64) error {
			_, err := f.store.Renew(f.ctx, lease.RenewParams{Job: f.job, Fence: fence, TTL: time.Minute, Now: now})
			return err
		}},
		{"renew/zero ttl", func(f *fixture, fence int64) error {
			_, err := f.store.Renew(f.ctx, lease.RenewParams{Job: f.job, Owner: "a", Fence: fence, Now: now})
			return err
		}},
		{"renew/negative ttl", func(f *fixture, fence int64) error {
			_, err := f.store.Renew(f.ctx, lease.RenewParams{Job: f.job, Owner: "a", Fence: fence, TTL: -time.Minute, Now: now})
			return err
		}},
		{"renew/empty job", func(f *fixture, fence int64) error {
			_, err := f.store.Renew(f.ctx, lease.RenewParams{Owner: "a", Fence: fence, TTL: time.Minute, Now: now})
			return err
		}},
		{"release/empty owner", func(f *fixture, fence int64) error {
			return f.store.Release(f.ctx, lease.ReleaseParams{Job: f.job, Fence: fence})
		}},
		{"release/empty job", func(f *fixture, fence int64) error {
			return f.store.Release(f.ctx, lease.ReleaseParams{Owner: "a", Fence: fence})
		}},
		{"inspect/empty job", func(f *fixture, _ int64) error {
			_, err := f.store.Inspect(f.ctx, "")
			return err
		}},
	}
	// Each call meets the job in every state it can be in.
	states := []struct {
		name        string
		arrangeFunc func(f *fixture) int64 // returns the fence calls use
	}{
		{"absent", func(*fixture) int64 { return 1 }},
		{"held", func(f *fixture) int64 { return f.acquire("a", time.Hour, at(0), 0).Fence }},
		{"free", func(f *fixture) int64 {
			l := f.acquire("a", time.Hour, at(0), 0)
			require.NoError(f.t, f.release("a", l.Fence))
			return l.Fence
		}},
		{"expired", func(f *fixture) int64 { return f.acquire("a", time.Nanosecond, at(0), 0).Fence }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, s := range states {
				t.Run(s.name, func(t *testing.T) {
					t.Parallel()
					f := setup(t, h)
					fence := s.arrangeFunc(f)
					before, beforeErr := f.store.Inspect(f.ctx, f.job)

					var err error
					require.NotPanics(t, func() { err = c.callFunc(f, fence) })
					requireNoSentinel(t, err)

					after, afterErr := f.store.Inspect(f.ctx, f.job)
					if beforeErr != nil {
						require.ErrorIs(t, afterErr, lease.ErrNotFound, "an invalid call created %+v", after)
						return
					}
					require.NoError(t, afterErr)
					requireSame(t, before, after)
				})
			}
		})
	}
}
