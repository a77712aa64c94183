package postgres

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ledger/ledgertest"
)

// Concurrent setups apply each migration once; a second setup applies
// nothing.
func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	t.Parallel()
	db := openEmptyDB(t)
	v, err := db.Version(t.Context())
	require.NoError(t, err)
	require.Zero(t, v)
	require.ErrorIs(t, db.CheckSchema(t.Context()), ErrNoSchema)

	var wg sync.WaitGroup
	applied := make([][]int, 4)
	errs := make([]error, 4)
	for i := range applied {
		wg.Go(func() { applied[i], errs[i] = db.Migrate(t.Context()) })
	}
	wg.Wait()
	total := 0
	for i := range applied {
		require.NoError(t, errs[i])
		total += len(applied[i])
	}
	ms, err := Migrations()
	require.NoError(t, err)
	require.Equal(t, len(ms), total, "each migration applied once")

	again, err := db.Migrate(t.Context())
	require.NoError(t, err)
	require.Empty(t, again)
	v, err = db.Version(t.Context())
	require.NoError(t, err)
	require.Equal(t, SchemaVersion(), v)
	require.NoError(t, db.CheckSchema(t.Context()))
}

// A database migrated by a newer baton is refused, and left alone.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	_, err := db.pool.Exec(t.Context(), `INSERT INTO baton_schema_migrations VALUES ($1, 'future.sql', now())`, SchemaVersion()+1)
	require.NoError(t, err)
	_, err = db.Migrate(t.Context())
	require.ErrorIs(t, err, ErrSchemaTooNew)
	require.ErrorIs(t, db.CheckSchema(t.Context()), ErrSchemaTooNew)
}

// A store on a database without the schema says what to run.
func TestNoSchemaSaysSetup(t *testing.T) {
	t.Parallel()
	db := openEmptyDB(t)
	_, err := NewLeaseStore(db).Inspect(t.Context(), "fx")
	require.ErrorIs(t, err, ErrNoSchema)
	require.Contains(t, err.Error(), "baton setup --backend postgres")
	require.NotErrorIs(t, err, lease.ErrNotFound)
}

// Migration files are named by version, in order.
func TestMigrationsWellFormed(t *testing.T) {
	t.Parallel()
	ms, err := Migrations()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for i, m := range ms {
		require.Equal(t, i+1, m.Version, m.Name)
	}
}

// A bad connection string is named as such, and an unreachable server is
// ErrUnavailable.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), "postgres://u:secret@127.0.0.1:notaport/db", nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
	_, err = Open(t.Context(), "postgres://u@127.0.0.1:1/db?connect_timeout=2", nil)
	require.ErrorIs(t, err, ErrUnavailable)
}

// A database at schema version 1, holding a run and items, migrates to
// the current version: the run reads 0 shards (it settles as one shard,
// the compatibility rule of migration 002), the items are kept and list
// in byte-wise order whatever the database's collation.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	db := openEmptyDB(t)
	ms, err := Migrations()
	require.NoError(t, err)
	require.Greater(t, len(ms), 1)
	_, err = db.pool.Exec(t.Context(), ms[0].SQL)
	require.NoError(t, err)
	_, err = db.pool.Exec(t.Context(), `CREATE TABLE baton_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL);
		INSERT INTO baton_schema_migrations VALUES (1, '`+ms[0].Name+`', now())`)
	require.NoError(t, err)
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_runs (job, nominal, generation, state, fence, open_fence, opened_at, updated_at)
		VALUES ('fx', $1, 1, 'fanned_out', 3, 3, 1, 1)`, nominal.UnixNano())
	require.NoError(t, err)
	run := ledger.RunID{Job: "fx", Nominal: nominal, Generation: 1}
	for _, asset := range []string{"b", "B", "a"} {
		_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_items (run, asset, state, created_at, updated_at) VALUES ($1, $2, 'SUCCEEDED', 1, 1)`, run.String(), asset)
		require.NoError(t, err)
	}
	require.ErrorIs(t, db.CheckSchema(t.Context()), ErrNoSchema, "version 1 is behind")

	applied, err := db.Migrate(t.Context())
	require.NoError(t, err)
	require.Equal(t, []int{2}, applied[:1])
	s := NewLedgerStore(db)
	r, err := s.GetRun(t.Context(), "fx", nominal)
	require.NoError(t, err)
	require.Zero(t, r.Shards)
	require.Equal(t, int64(3), r.OpenFence)
	items, err := s.ListItems(t.Context(), run)
	require.NoError(t, err)
	var assets []string
	for _, it := range items {
		assets = append(assets, it.Key.Asset)
	}
	require.Equal(t, []string{"B", "a", "b"}, assets)
	shard, err := s.ListItemRange(t.Context(), run, "B", "a")
	require.NoError(t, err)
	require.Len(t, shard, 2)
}

// A database at schema version 5 with a contention row migrates to the
// current version: the row reads without a streak and keeps its count,
// its next refusal starts the streak, and the lock tables exist (a lock
// named like the job is not its lease).
func TestMigrateContentionStreak(t *testing.T) {
	t.Parallel()
	db := openEmptyDB(t)
	ms, err := Migrations()
	require.NoError(t, err)
	_, err = db.pool.Exec(t.Context(), `CREATE TABLE baton_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`)
	require.NoError(t, err)
	for _, m := range ms {
		if m.Version > 5 {
			break
		}
		_, err = db.pool.Exec(t.Context(), m.SQL)
		require.NoError(t, err, m.Name)
		_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_schema_migrations VALUES ($1, $2, now())`, m.Version, m.Name)
		require.NoError(t, err)
	}
	_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_lease_contention (job, count, last_at, holder, holder_fence, holder_until) VALUES ('fx', 7, 1000, 'a', 3, 2000)`)
	require.NoError(t, err)

	applied, err := db.Migrate(t.Context())
	require.NoError(t, err)
	require.Equal(t, 6, applied[0])
	s := NewLeaseStore(db)
	got, err := s.Contention(t.Context(), "fx")
	require.NoError(t, err)
	require.EqualValues(t, 7, got.Count)
	require.True(t, got.StreakStart.IsZero())
	now := fromNanos(5000)
	require.NoError(t, s.RecordContention(t.Context(), "fx", lease.Lease{Owner: "a", Fence: 3}, now, time.Minute))
	got, err = s.Contention(t.Context(), "fx")
	require.NoError(t, err)
	require.EqualValues(t, 8, got.Count)
	require.True(t, now.Equal(got.StreakStart), "the next refusal starts the streak: %s", got.StreakStart)
	require.Equal(t, time.Minute, got.TTL)

	l, err := NewLockStore(db).Acquire(t.Context(), lease.AcquireParams{Job: "fx", Owner: "app", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	require.EqualValues(t, 1, l.Fence)
}

// A database at schema version 7 with a FAILED item migrates to the
// current version (008_item_wait): the item reads with no wait and no
// next attempt (the compatibility rule), keeps its error, and takes a
// note afterwards.
func TestMigrateItemWait(t *testing.T) {
	t.Parallel()
	db := openEmptyDB(t)
	ms, err := Migrations()
	require.NoError(t, err)
	_, err = db.pool.Exec(t.Context(), `CREATE TABLE baton_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`)
	require.NoError(t, err)
	for _, m := range ms {
		if m.Version > 7 {
			break
		}
		_, err = db.pool.Exec(t.Context(), m.SQL)
		require.NoError(t, err, m.Name)
		_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_schema_migrations VALUES ($1, $2, now())`, m.Version, m.Name)
		require.NoError(t, err)
	}
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	key := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: nominal, Generation: 1}, Asset: "EURUSD"}
	_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_items (run, asset, state, owner, attempt, error, created_at, updated_at)
		VALUES ($1, 'EURUSD', 'FAILED', 'c1', 2, 'upstream 503', 1, 1)`, key.Run.String())
	require.NoError(t, err)

	applied, err := db.Migrate(t.Context())
	require.NoError(t, err)
	require.Equal(t, 8, applied[0])
	ledgertest.RequireItemWithoutWait(t, NewLedgerStore(db), key)
}

// A database at schema version 8 with a run in its fan-out migrates to
// 009_run_trace: the run reads with no trace id (not known: the
// compatibility rule), keeps none when resumed, and its next generation
// takes the opener's.
func TestMigrateRunTrace(t *testing.T) {
	t.Parallel()
	db := openEmptyDB(t)
	ms, err := Migrations()
	require.NoError(t, err)
	_, err = db.pool.Exec(t.Context(), `CREATE TABLE baton_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`)
	require.NoError(t, err)
	for _, m := range ms {
		if m.Version > 8 {
			break
		}
		_, err = db.pool.Exec(t.Context(), m.SQL)
		require.NoError(t, err, m.Name)
		_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_schema_migrations VALUES ($1, $2, now())`, m.Version, m.Name)
		require.NoError(t, err)
	}
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	_, err = db.pool.Exec(t.Context(), `INSERT INTO baton_runs (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at)
		VALUES ('fx', $1, 1, 'fanning_out', 3, 3, 1, $1, $1)`, toNanos(nominal))
	require.NoError(t, err)

	applied, err := db.Migrate(t.Context())
	require.NoError(t, err)
	require.Equal(t, []int{9}, applied)
	ledgertest.RequireRunWithoutTrace(t, NewLedgerStore(db), "fx", nominal)
}
