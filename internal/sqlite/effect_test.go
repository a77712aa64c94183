package sqlite

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/effect/effecttest"
)

func TestEffectConformance(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	effecttest.Run(t, effecttest.Harness{NewStoreFunc: func(*testing.T) effect.Store { return NewEffectStore(db) }})
}

// Two handles on one file, as two processes would hold: each has its own
// writer, so their writes meet only in SQLite's locking. The suite runs
// with every call going to the next handle in turn.
func TestEffectConformanceTwoHandles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	var stores []effect.Store
	for range 2 {
		db, err := Open(t.Context(), path, nil)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		stores = append(stores, NewEffectStore(db))
	}
	s := &alternating{stores: stores}
	effecttest.Run(t, effecttest.Harness{NewStoreFunc: func(*testing.T) effect.Store { return s }})
}

// alternating sends each call to the next of its stores.
type alternating struct {
	stores []effect.Store
	n      atomic.Int64
}

func (a *alternating) next() effect.Store {
	return a.stores[int(a.n.Add(1))%len(a.stores)]
}

func (a *alternating) Put(ctx context.Context, r effect.Record) error { return a.next().Put(ctx, r) }

func (a *alternating) Get(ctx context.Context, job, key string) (effect.Record, error) {
	return a.next().Get(ctx, job, key)
}

// The effects migration keeps the bars table: earlier versions' bars are
// no longer read, but not dropped.
func TestEffectMigrationKeepsBars(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	var tables []string
	rows, err := db.sql.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('bars', 'effects') ORDER BY name`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"bars", "effects"}, tables)
}
