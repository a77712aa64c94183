package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/ratelimit/ratelimittest"
	"github.com/batonhq/baton/internal/sqlite"
)

func TestRateLimitStore(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	ratelimittest.Run(t, ratelimittest.Harness{NewStore: func(*testing.T) ratelimit.Store { return sqlite.NewRateLimitStore(db) }})
}

// Two handles of one store file (two processes' worth of connections and
// writers), 8 callers each, share a limit of 20 starts per 250 ms for 2 s:
// the observed rate stays at the limit (the full 60 s measure at 50/s is
// in make bench).
func TestRateLimitSharedByTwoProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	var stores []ratelimit.Store
	for range 2 {
		db, err := sqlite.Open(t.Context(), path, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		stores = append(stores, sqlite.NewRateLimitStore(db))
	}
	m, err := ratelimittest.Measure(t.Context(), stores, 8, ratelimit.Limit{Name: "shared", Starts: 20, Per: 250 * time.Millisecond}, 2*time.Second)
	require.NoError(t, err)
	t.Logf("%d starts in %s: %.1f/s for a limit of %.0f/s, %d takes", m.Starts, m.Span, m.Rate, m.Limit, m.Attempts)
	require.LessOrEqual(t, m.Rate, m.Limit*1.05)
	require.GreaterOrEqual(t, m.Rate, m.Limit*0.9)
}
