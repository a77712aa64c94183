package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger/ledgertest"
)

// A run row written before migration 018_run_trace (no trace_id column)
// reads after it with no trace id (not known: the compatibility rule),
// keeps none when resumed, and its next generation takes the opener's.
func TestRunTraceMigratesOldRows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	// Back to the schema before the migration, as an earlier version left
	// it, with a run of that version in its fan-out.
	for _, q := range []string{
		`ALTER TABLE runs DROP COLUMN trace_id`,
		`DELETE FROM schema_migrations WHERE name LIKE '%018_run_trace.sql'`,
	} {
		_, err = db.SQL().ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	_, err = db.SQL().ExecContext(t.Context(), `INSERT INTO runs (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at)
		VALUES ('fx', ?, 1, 'fanning_out', 3, 3, 1, ?, ?)`, toNanos(nominal), toNanos(nominal), toNanos(nominal))
	require.NoError(t, err)
	require.NoError(t, db.Close())

	db, err = Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	ledgertest.RequireRunWithoutTrace(t, NewLedgerStore(db), "fx", nominal)
}
