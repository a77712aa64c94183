package consumer_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlite"
)

// openDB opens a fresh embedded database file, closed when the test ends.
func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// newStores returns the embedded stores on a fresh database file.
func newStores(t *testing.T) (ledger.Store, effect.Store) {
	t.Helper()
	db := openDB(t)
	return sqlite.NewLedgerStore(db), sqlite.NewEffectStore(db)
}

// readBar reads fx's bar of asset for the tick's minute from effects.
func readBar(t *testing.T, effects effect.Store, asset string, nominal time.Time) (fx.Bar, baton.Effect) {
	t.Helper()
	b, eff, err := fx.ReadBar(t.Context(), effect.Bind(effects, fx.Name, 1, 1, nil), asset, fx.BarMinute(nominal))
	require.NoError(t, err)
	return b, eff
}
