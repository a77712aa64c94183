package postgres

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/pgtest"
)

// TestMain stops the test binary's PostgreSQL server after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// openTestDB opens a fresh database with baton's schema on the test
// server, closed when the test ends.
func openTestDB(tb testing.TB) *DB {
	tb.Helper()
	db := openEmptyDB(tb)
	_, err := db.Migrate(tb.Context())
	require.NoError(tb, err)
	return db
}

// openEmptyDB opens a fresh database without baton's schema.
func openEmptyDB(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(tb.Context(), pgtest.DSN(tb), &Options{MaxConns: 16})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, db.Close()) })
	return db
}
