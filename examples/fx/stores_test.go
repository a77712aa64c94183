package fx_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/sqlite"
)

// openDB opens a fresh embedded database file, closed when the test ends.
func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func newBars(t *testing.T) *sqlite.BarsStore { return sqlite.NewBarsStore(openDB(t)) }

func newLedgerStores(t *testing.T) (*sqlite.LeaseStore, *sqlite.LedgerStore) {
	db := openDB(t)
	return sqlite.NewLeaseStore(db), sqlite.NewLedgerStore(db)
}
