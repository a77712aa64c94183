package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger/ledgertest"
	"github.com/batonhq/baton/internal/sqlite"
)

func TestPrune(t *testing.T) {
	t.Parallel()
	ledgertest.RunPrune(t, func(t *testing.T) ledgertest.PrunerStore {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		return sqlite.NewLedgerStore(db)
	})
}
