package exec_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// The embedded store prunes a job's runs once they finished more than
// the job's Retention ago, and keeps them until then.
func TestPrunePassOnSQLite(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	require.NotNil(t, b.Pruner)
	cat := baton.MustCatalog(baton.Job{Name: "kept", Schedule: "rate(1 minute)", Assets: []string{"a", "b"}, Retention: time.Hour,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("r"), nil })})
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	eng, err := exec.New(b, exec.Options{Catalog: cat, NowFunc: clock, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	sum, err := eng.Trigger(t.Context(), "kept", now, false)
	require.NoError(t, err)
	wctx, stop := context.WithTimeout(t.Context(), 30*time.Second)
	run, _, err := eng.WaitSettled(wctx, "kept", sum.Nominal, 10*time.Millisecond)
	stop()
	cancel()
	wg.Wait()
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)

	mu.Lock()
	now = run.FinishedAt.Add(59 * time.Minute)
	mu.Unlock()
	res, err := eng.PrunePass(t.Context(), 0)
	require.NoError(t, err)
	require.Zero(t, res.Records, "within the retention nothing is pruned")

	mu.Lock()
	now = run.FinishedAt.Add(61 * time.Minute)
	mu.Unlock()
	res, err = eng.PrunePass(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, 1, res.Runs)
	require.Equal(t, 3, res.Records, "two items and the run")
	_, err = b.Ledger.GetRun(t.Context(), "kept", sum.Nominal)
	require.ErrorIs(t, err, ledger.ErrNotFound)
}
