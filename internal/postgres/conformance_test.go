package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/effect/effecttest"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/lease/leasetest"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ledger/ledgertest"
	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/ratelimit/ratelimittest"
)

// Every suite runs against one database per suite, as the stores of
// several jobs and processes share one database.

func TestLeaseStoreConformance(t *testing.T) {
	t.Parallel()
	store := NewLeaseStore(openTestDB(t))
	leasetest.Run(t, leasetest.Harness{
		NewStore:     func(*testing.T) lease.Store { return store },
		Capabilities: leasetest.Capabilities{LatestRefusalByClock: true},
	})
}

func TestEffectConformance(t *testing.T) {
	t.Parallel()
	store := NewEffectStore(openTestDB(t))
	effecttest.Run(t, effecttest.Harness{NewStoreFunc: func(*testing.T) effect.Store { return store }})
}

// Two pools on one database stand for two processes.
func TestLeaseStoreTwoPools(t *testing.T) {
	first := openTestDB(t)
	second, err := Open(t.Context(), first.pool.Config().ConnString(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { second.Close() })
	leasetest.TestAcquireAcrossHandles(t, []lease.Store{NewLeaseStore(first), NewLeaseStore(second)})
}

func TestLedgerStoreConformance(t *testing.T) {
	t.Parallel()
	store := NewLedgerStore(openTestDB(t))
	ledgertest.Run(t, ledgertest.Harness{NewStore: func(*testing.T) ledger.Store { return store }})
}

func TestRateLimitStoreConformance(t *testing.T) {
	t.Parallel()
	store := NewRateLimitStore(openTestDB(t))
	ratelimittest.Run(t, ratelimittest.Harness{NewStore: func(*testing.T) ratelimit.Store { return store }})
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ledgertest.RunPrune(t, func(t *testing.T) ledgertest.PrunerStore { return NewLedgerStore(openTestDB(t)) })
}

func TestLockStoreConformance(t *testing.T) {
	t.Parallel()
	store := NewLockStore(openTestDB(t))
	leasetest.Run(t, leasetest.Harness{
		NewStore:     func(*testing.T) lease.Store { return store },
		Capabilities: leasetest.Capabilities{LatestRefusalByClock: true},
	})
}

// A lock named like a job is not that job's lease.
func TestLockStoreIsNotTheJobsLeases(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx, now := t.Context(), time.Unix(1_700_000_000, 0)
	leases, locks := NewLeaseStore(db), NewLockStore(db)
	job, err := leases.Acquire(ctx, lease.AcquireParams{Job: "nightly", Owner: "coordinator", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	require.NoError(t, leases.RecordContention(ctx, "nightly", job, now, time.Minute))
	lock, err := locks.Acquire(ctx, lease.AcquireParams{Job: "nightly", Owner: "app", TTL: time.Minute, Now: now})
	require.NoError(t, err, "the job's lease must not hold the lock of the same name")
	require.EqualValues(t, 1, lock.Fence)
	c, err := locks.Contention(ctx, "nightly")
	require.NoError(t, err)
	require.Zero(t, c.Count, "a job's contention is not its namesake lock's")
	got, err := leases.Inspect(ctx, "nightly")
	require.NoError(t, err)
	require.Equal(t, "coordinator", got.Owner)
}
