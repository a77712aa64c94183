package exec_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/dagtest"
	"github.com/batonhq/baton/internal/heartbeattest"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/resumetest"
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

// The job model end to end on the embedded store.
func TestJobModelOnSQLite(t *testing.T) {
	t.Parallel()
	jobmodeltest.Run(t, func(t *testing.T, _ ...string) backend.Backend { // the embedded store makes job queues as they are named
		b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, b.Close()) })
		return b
	})
}

func TestResumeAndCatchUpAfterACrashOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	resumetest.Run(t, b, "fxresume")
}
