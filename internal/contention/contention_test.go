package contention_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/contention"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlite"
)

func TestCounting(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	raw, store := sqlite.NewLeaseStore(db), sqlite.NewContentionStore(db)
	ctx := t.Context()
	leases := contention.Counting(raw, store, nil)
	now := time.Now()
	held, err := leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "a", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	for range 3 {
		_, err = leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "b", TTL: time.Minute, Now: now})
		require.ErrorIs(t, err, lease.ErrHeld)
	}
	// Re-entrant and uncontended acquisitions count nothing.
	_, err = leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "a", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	c, err := store.Contention(ctx, "fx")
	require.NoError(t, err)
	require.EqualValues(t, 3, c.Count)
	require.Equal(t, "a", c.Holder.Owner)
	require.Equal(t, held.Fence, c.Holder.Fence)
	require.Same(t, lease.Store(raw), contention.Counting(raw, nil, nil), "no store: unchanged")
}
