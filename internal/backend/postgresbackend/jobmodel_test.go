package postgresbackend_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/pgtest"
)

// openFresh sets up a fresh database and opens the backend on it.
func openFresh(t testing.TB) backend.Backend {
	t.Helper()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// The job model end to end on PostgreSQL: every case of the suite,
// grouped (TestJobModel/<group>/<case>), each on a fresh database. Job
// queues are opened on demand; its classes with a Priority share one
// pool (PriorityPool): the receives that probe them are statements on
// the server, no fee.
func TestJobModel(t *testing.T) {
	t.Parallel()
	jobmodeltest.Run(t, jobmodeltest.Harness{
		Engine:   "postgres",
		OpenFunc: func(t *testing.T, _ ...string) backend.Backend { return openFresh(t) },
		Caps:     jobmodeltest.Capabilities{PriorityPool: true},
	})
}
