package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ledger/ledgertest"
)

func TestLedgerStore(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, ledgertest.Harness{NewStore: func(t *testing.T) ledger.Store { return NewLedgerStore(openLedgerTestDB(t)) }})
}

// TestLedgerStoreSharedDB runs the suite with every case on one database
// file, as processes sharing a file would.
func TestLedgerStoreSharedDB(t *testing.T) {
	t.Parallel()
	store := NewLedgerStore(openLedgerTestDB(t))
	ledgertest.Run(t, ledgertest.Harness{NewStore: func(*testing.T) ledger.Store { return store }})
}

// openLedgerTestDB opens a fresh database in a temporary directory.
func openLedgerTestDB(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(tb.Context(), filepath.Join(tb.TempDir(), "baton.db"), nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, db.Close()) })
	return db
}
