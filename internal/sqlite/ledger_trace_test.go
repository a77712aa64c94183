package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// A run row written before migration 018_run_trace (no trace_id column)
// reads after it with no trace id (not known: the compatibility rule),
// keeps none when resumed, and its next generation takes the opener's.
func TestRunTraceMigratesOldRows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	// Back to the schema before the migration, as an earlier version left
	// it, with a run of that version in its fan-out.
	for _, q := range []string{
		`ALTER TABLE runs DROP COLUMN trace_id`,
		`DELETE FROM schema_migrations WHERE name LIKE '%018_run_trace.sql'`,
	} {
		_, err = db.SQL().ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	_, err = db.SQL().ExecContext(t.Context(), `INSERT INTO runs (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at)
		VALUES ('fx', ?, 1, 'fanning_out', 3, 3, 1, ?, ?)`, toNanos(nominal), toNanos(nominal), toNanos(nominal))
	require.NoError(t, err)
	require.NoError(t, db.Close())

	db, err = Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	s := NewLedgerStore(db)
	run, err := s.GetRun(t.Context(), "fx", nominal)
	require.NoError(t, err)
	require.Empty(t, run.TraceID)
	require.EqualValues(t, 3, run.OpenFence)

	const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	run, out, err := s.OpenRun(t.Context(), ledger.OpenRunParams{Job: "fx", Nominal: nominal, Fence: 4, TraceID: tid, Now: nominal.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, out)
	require.Empty(t, run.TraceID, "a resume does not give a trace id to a generation opened without one")
	run, _, err = s.OpenRun(t.Context(), ledger.OpenRunParams{Job: "fx", Nominal: nominal, Fence: 5, Force: true, TraceID: tid, Now: nominal.Add(2 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 2, run.ID.Generation)
	require.Equal(t, tid, run.TraceID)
}
