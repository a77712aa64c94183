package consumer_test

import (
	"os"
	"os/exec"
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

// batchLedgerEnv, when set, makes newStores's ledger one with the
// batched abilities (batchLedger, as PostgreSQL's), so that every test
// runs the consumer's set-based path (TestSuiteOnABatchLedger).
const batchLedgerEnv = "BATON_CONSUMER_TEST_BATCH_LEDGER"

// newStores returns the embedded stores on a fresh database file.
func newStores(t *testing.T) (ledger.Store, effect.Store) {
	t.Helper()
	db := openDB(t)
	var led ledger.Store = sqlite.NewLedgerStore(db)
	if os.Getenv(batchLedgerEnv) != "" {
		led = &batchLedger{Store: led}
	}
	return led, sqlite.NewEffectStore(db)
}

// Every test of the package again, on a ledger that claims and completes
// in batches: the waves (claims together, completions together) keep
// every behaviour the one-by-one path has (held, duplicates, failures,
// dead letters, requeues, stops, cancellations, heartbeats, settling).
func TestSuiteOnABatchLedger(t *testing.T) {
	if os.Getenv(batchLedgerEnv) != "" {
		t.Skip("the run on a batch ledger itself")
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^Test", "-test.skip", "^TestSuiteOnABatchLedger$", "-test.count=1")
	cmd.Env = append(os.Environ(), batchLedgerEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// readBar reads fx's bar of asset for the tick's minute from effects.
func readBar(t *testing.T, effects effect.Store, asset string, nominal time.Time) (fx.Bar, baton.Effect) {
	t.Helper()
	b, eff, err := fx.ReadBar(t.Context(), effect.Bind(effects, fx.Name, 1, 1, nil), asset, fx.BarMinute(nominal))
	require.NoError(t, err)
	return b, eff
}
