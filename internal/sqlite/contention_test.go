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
			require.NoError(t, store.RecordContention(ctx, "fx", holder, at.Add(time.Duration(i)*time.Second), time.Minute))
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
			recorded <- s.RecordContention(t.Context(), "fx", lease.Lease{Owner: "a", Fence: 1}, time.Now(), time.Minute)
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

// A contention row written before streaks were kept (the store before
// migration 015_locks) reads with no streak, keeps its count, and its next
// refusal starts the streak.
func TestContentionRowBeforeStreaks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	// Take the store back to the schema before 015_locks.
	for _, q := range []string{
		`DROP TABLE locks`, `DROP TABLE lock_contention`,
		`ALTER TABLE lease_contention DROP COLUMN streak_at`, `ALTER TABLE lease_contention DROP COLUMN ttl`,
		`DELETE FROM schema_migrations WHERE name = 'migrations/015_locks.sql'`,
		`INSERT INTO lease_contention (job, count, last_at, holder, holder_fence, holder_until) VALUES ('fx', 7, 1000, 'a', 3, 2000)`,
	} {
		_, err := db.SQL().ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	db, err = Open(t.Context(), path, nil) // migrates
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	s := NewLeaseStore(db)
	got, err := s.Contention(t.Context(), "fx")
	require.NoError(t, err)
	require.EqualValues(t, 7, got.Count)
	require.True(t, got.StreakStart.IsZero(), "no streak before the migration: %s", got.StreakStart)
	require.Zero(t, got.TTL)
	require.False(t, got.Escalated(fromNanos(1000)))

	now := fromNanos(5000)
	require.NoError(t, s.RecordContention(t.Context(), "fx", lease.Lease{Owner: "a", Fence: 3}, now, time.Minute))
	got, err = s.Contention(t.Context(), "fx")
	require.NoError(t, err)
	require.EqualValues(t, 8, got.Count)
	require.True(t, now.Equal(got.StreakStart), "the next refusal starts the streak, even by the same holder: %s", got.StreakStart)
	require.Equal(t, time.Minute, got.TTL)
}
