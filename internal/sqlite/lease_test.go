package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/lease/leasetest"
)

// openLeaseTestDB opens a fresh database file in a temporary directory,
// closed when the test ends.
func openLeaseTestDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// leaseHarness runs the suite with every case on one file, as the stores
// of several jobs share it. The contention record is one conditional
// UPSERT that keeps the latest refusal by the callers' clocks.
func leaseHarness(store lease.Store) leasetest.Harness {
	return leasetest.Harness{
		NewStore:     func(*testing.T) lease.Store { return store },
		Capabilities: leasetest.Capabilities{LatestRefusalByClock: true},
	}
}

func TestLeaseStoreConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, leaseHarness(NewLeaseStore(openLeaseTestDB(t))))
}

// Two handles on one file stand for two processes.
func TestLeaseStoreTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baton.db")
	stores := make([]lease.Store, 2)
	for i := range stores {
		db, err := Open(t.Context(), path, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		stores[i] = NewLeaseStore(db)
	}
	leasetest.TestAcquireAcrossHandles(t, stores)
}

// A lock named like a job is not that job's lease: the lock store keeps
// its records (and fences, and contention) in tables of their own.
func TestLockStoreIsNotTheJobsLeases(t *testing.T) {
	t.Parallel()
	db := openLeaseTestDB(t)
	leases, locks := NewLeaseStore(db), NewLockStore(db)
	requireLocksApart(t, leases, locks)
}

// requireLocksApart takes a job's lease and the lock of the same name,
// each by another owner: both succeed, and each fence is its own.
func requireLocksApart(t *testing.T, leases, locks lease.Store) {
	t.Helper()
	ctx, now := t.Context(), time.Unix(1_700_000_000, 0)
	name := fmt.Sprintf("nightly-%d", time.Now().UnixNano())
	job, err := leases.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "coordinator", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	for range 3 {
		l, err := leases.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "coordinator", TTL: time.Minute, Now: now})
		require.NoError(t, err)
		job = l
	}
	lock, err := locks.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "app", TTL: time.Minute, Now: now})
	require.NoError(t, err, "the job's lease must not hold the lock of the same name")
	require.EqualValues(t, 1, lock.Fence, "the lock's fence is its own")
	got, err := leases.Inspect(ctx, name)
	require.NoError(t, err)
	require.Equal(t, "coordinator", got.Owner)
	require.Equal(t, job.Fence, got.Fence)
	_, err = locks.Inspect(ctx, "never-"+name)
	require.ErrorIs(t, err, lease.ErrNotFound)
	if c, ok := locks.(lease.ContentionCounter); ok {
		_, err := leases.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "other", TTL: time.Minute, Now: now})
		require.ErrorIs(t, err, lease.ErrHeld)
		require.NoError(t, leases.(lease.ContentionCounter).RecordContention(ctx, name, job, now, time.Minute))
		got, err := c.Contention(ctx, name)
		require.NoError(t, err)
		require.Zero(t, got.Count, "a job's contention is not its namesake lock's")
	}
}

func TestLockStoreConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, leaseHarness(NewLockStore(openLeaseTestDB(t))))
}
