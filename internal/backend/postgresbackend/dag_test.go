package postgresbackend_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/dagtest"
	"github.com/batonhq/baton/internal/heartbeattest"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/resumetest"
)

// openFresh sets up a fresh database and opens the backend on it.
func openFresh(t *testing.T) backend.Backend {
	t.Helper()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// A graph of derived items under a delivery storm, end to end on
// PostgreSQL: each item is processed once, in dependency order.
func TestDAG(t *testing.T) {
	t.Parallel()
	dagtest.Run(t, openFresh(t))
}

// Long items keep their claim by heartbeats, and a cancel reaches the
// running code, on PostgreSQL.
func TestHeartbeats(t *testing.T) {
	t.Parallel()
	heartbeattest.Run(t, openFresh(t))
}

// Runs larger than a shard settle by their consumers alone, on
// PostgreSQL.
func TestLargeRunSettles(t *testing.T) {
	t.Parallel()
	dagtest.RunLarge(t, openFresh(t))
}

// A runtime killed mid fan-out, then restarted: the crashed run resumes,
// the missed ticks are caught up, on PostgreSQL.
func TestResumeAndCatchUpAfterACrash(t *testing.T) {
	t.Parallel()
	resumetest.Run(t, openFresh(t), "fxresume")
}

// The job model end to end on PostgreSQL: run-time lists, a deduped
// submission, a two-level graph, a chain, a heartbeating long item, shared
// rate limits and two priority classes (job queues are opened on demand).
func TestJobModel(t *testing.T) {
	t.Parallel()
	// Its classes with a Priority share one pool (PriorityPool): the
	// receives that probe them are statements on the server, no fee.
	require.True(t, openFresh(t).CheapProbes)
	jobmodeltest.Run(t, func(t *testing.T, _ ...string) backend.Backend { return openFresh(t) })
}
