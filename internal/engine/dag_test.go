package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/dagtest"
	"github.com/batonhq/baton/internal/heartbeattest"
	"github.com/batonhq/baton/internal/itemstest"
)

func TestDerivedGraphOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	dagtest.Run(t, b)
}

func TestLongItemsOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	heartbeattest.Run(t, b)
}

func TestLargeRunSettlesByConsumersOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	dagtest.RunLarge(t, b)
}

func TestRunTimeItemsOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	itemstest.Run(t, b, 1000)
}

func TestSubmissionOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	itemstest.RunSubmission(t, b, 200)
}

func TestChainsOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	itemstest.RunChain(t, b)
}
