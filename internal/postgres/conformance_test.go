package postgres

import (
	"errors"
	"fmt"
	"sync"
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

// Two pools on one database stand for two processes: contenders racing on
// the same free lease through both produce exactly one holder, and every
// other contender is told who it is, exactly (the holder that refused it).
func TestLeaseStoreTwoPools(t *testing.T) {
	t.Parallel()
	first := openTestDB(t)
	second, err := Open(t.Context(), first.pool.Config().ConnString(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { second.Close() })
	stores := []*LeaseStore{NewLeaseStore(first), NewLeaseStore(second)}
	const contenders = 8
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for round := range 20 {
		job := fmt.Sprintf("job-%d", round)
		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			results = make([]lease.Lease, contenders)
			errs    = make([]error, contenders)
		)
		for c := range contenders {
			wg.Go(func() {
				<-start
				results[c], errs[c] = stores[c%2].Acquire(t.Context(), lease.AcquireParams{
					Job: job, Owner: fmt.Sprintf("owner-%d", c), TTL: time.Minute, Now: now,
				})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for c, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "round %d: owners %d and %d both acquired", round, winner, c)
				winner = c
			}
		}
		require.NotEqual(t, -1, winner, "round %d: nobody acquired: %v", round, errs)
		won := results[winner]
		require.Equal(t, int64(1), won.Fence)
		for c, err := range errs {
			if c == winner {
				continue
			}
			var held *lease.HeldError
			require.True(t, errors.As(err, &held), "round %d, owner %d: %v", round, c, err)
			require.Equal(t, won, held.Holder, "round %d, owner %d", round, c)
		}
	}
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
