package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ledger/ledgertest"
)

// An item row written before migration 017_item_wait (no wait columns)
// reads after it with no wait and no next attempt (the compatibility
// rule), and takes a note afterwards.
func TestItemWaitMigratesOldRows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	// Back to the schema before the migration, as an earlier version left
	// it, with a FAILED item of that version.
	for _, q := range []string{
		`ALTER TABLE items DROP COLUMN wait_at`, `ALTER TABLE items DROP COLUMN wait_limit`,
		`ALTER TABLE items DROP COLUMN wait_key`, `ALTER TABLE items DROP COLUMN wait_attempt`,
		`DELETE FROM schema_migrations WHERE name LIKE '%017_item_wait.sql'`,
	} {
		_, err = db.SQL().ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	key := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: nominal, Generation: 1}, Asset: "EURUSD"}
	_, err = db.SQL().ExecContext(t.Context(), `INSERT INTO items (run, asset, state, owner, attempt, error, created_at, updated_at)
		VALUES (?, 'EURUSD', 'FAILED', 'c1', 2, 'upstream 503', 1, 1)`, key.Run.String())
	require.NoError(t, err)
	require.NoError(t, db.Close())

	db, err = Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	ledgertest.RequireItemWithoutWait(t, NewLedgerStore(db), key)
}
