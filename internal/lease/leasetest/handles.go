package leasetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// TestAcquireAcrossHandles: stores are handles on one backend (two open
// files, two connection pools) that stand for processes. Contenders
// racing on the same free lease through all of them produce exactly one
// holder, with fence 1; every other contender is told exactly who holds
// it (the holder that refused it), and every handle's Inspect reports
// that holder. It is not among Cases: it needs several handles, which
// only the adapter can open.
func TestAcquireAcrossHandles(t *testing.T, stores []lease.Store) {
	t.Parallel()
	const rounds, contenders = 20, 8
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for round := range rounds {
		job := fmt.Sprintf("handles-%d", round)
		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			results = make([]lease.Lease, contenders)
			errs    = make([]error, contenders)
		)
		for c := range contenders {
			wg.Go(func() {
				<-start
				results[c], errs[c] = stores[c%len(stores)].Acquire(t.Context(), lease.AcquireParams{
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
		require.Equal(t, fmt.Sprintf("owner-%d", winner), won.Owner)
		require.Equal(t, int64(1), won.Fence)
		for c, err := range errs {
			if c == winner {
				continue
			}
			var held *lease.HeldError
			require.True(t, errors.As(err, &held), "round %d, owner %d: %v", round, c, err)
			require.Equal(t, won, held.Holder, "round %d, owner %d", round, c)
		}
		for _, s := range stores {
			got, err := s.Inspect(t.Context(), job)
			require.NoError(t, err)
			require.Equal(t, won, got)
		}
	}
}
