package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// Refusals recorded through two handles on one file, as two processes
// record them, add up, and the latest by the callers' clocks is kept
// whatever the write order. (The conformance suite covers one store.)
func TestLeaseStoreContentionTwoHandles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	// A second handle on the file, as a second process would have.
	db2, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { db2.Close() })
	ctx := t.Context()

	r, err := NewLeaseStore(db).Contention(ctx, "fx")
	require.NoError(t, err)
	require.Zero(t, r.Count)

	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 10 {
		store := NewLeaseStore([]*DB{db, db2}[i%2])
		wg.Go(func() {
			holder := lease.Lease{Job: "fx", Owner: "holder-" + string(rune('a'+i)), Fence: int64(i), ExpiresAt: at.Add(time.Minute)}
			require.NoError(t, store.RecordContention(ctx, "fx", holder, at.Add(time.Duration(i)*time.Second)))
		})
	}
	wg.Wait()
	r, err = NewLeaseStore(db).Contention(ctx, "fx")
	require.NoError(t, err)
	require.EqualValues(t, 10, r.Count)
	require.True(t, r.Last.Equal(at.Add(9*time.Second)), "the latest refusal is kept whatever the write order")
	require.Equal(t, "holder-j", r.Holder.Owner)
	require.EqualValues(t, 9, r.Holder.Fence)
}

// RecordContention goes through the process's writer like every other
// write: it waits while another write of the process runs.
func TestRecordContentionWaitsForTheWriteTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
		require.NoError(t, err)
		defer db.Close()
		s := NewLeaseStore(db)
		release, running := make(chan struct{}), make(chan struct{})
		held := make(chan error, 1)
		go func() {
			held <- db.write(t.Context(), func(context.Context, *sql.Tx) error {
				close(running)
				<-release
				return nil
			})
		}()
		<-running

		recorded := make(chan error, 1)
		go func() {
			recorded <- s.RecordContention(t.Context(), "fx", lease.Lease{Owner: "a", Fence: 1}, time.Now())
		}()
		synctest.Wait()
		select {
		case err := <-recorded:
			t.Fatalf("recorded (%v) while another write held the turn", err)
		default:
		}
		r, err := s.Contention(t.Context(), "fx")
		require.NoError(t, err)
		require.Zero(t, r.Count)

		close(release)
		require.NoError(t, <-held)
		require.NoError(t, <-recorded)
		r, err = s.Contention(t.Context(), "fx")
		require.NoError(t, err)
		require.EqualValues(t, 1, r.Count)
	})
}
