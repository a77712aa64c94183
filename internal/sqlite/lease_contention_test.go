package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// More contenders than the pool has connections, on a store whose holder
// query is not prepared yet: a refused acquisition must not wait for a
// second connection while it holds the write lock (that stalls everyone
// until the busy timeout).
func TestLeaseStoreContentionBeyondPool(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		db, err := Open(t.Context(), filepath.Join(t.TempDir(), fmt.Sprintf("baton-%d.db", round)), &Options{BusyTimeout: 3 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		store := NewLeaseStore(db)
		now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

		const contenders = 20
		errs := make([]error, contenders)
		var wg sync.WaitGroup
		for i := range contenders {
			wg.Go(func() {
				_, errs[i] = store.Acquire(t.Context(), lease.AcquireParams{Job: "fx", Owner: fmt.Sprintf("o%d", i), TTL: time.Minute, Now: now})
			})
		}
		wg.Wait()
		holders := 0
		for i, err := range errs {
			if err == nil {
				holders++
				continue
			}
			var held *lease.HeldError
			require.True(t, errors.As(err, &held), "contender %d: %v", i, err)
		}
		require.Equal(t, 1, holders)
	}
}
