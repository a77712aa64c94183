package consumer_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlite"
)

// newStores returns the embedded stores on a fresh database file.
func newStores(t *testing.T) (ledger.Store, bars.Store) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return sqlite.NewLedgerStore(db), sqlite.NewBarsStore(db)
}
