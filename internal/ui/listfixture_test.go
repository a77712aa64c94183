package ui_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// listStore is an embedded store of a catalog of two jobs whose items
// are stored with their runs: "orders", used through submissions only
// (its run order-42 of 70 items, one DEAD with a hostile error), and
// "sweep", whose items (300: five pages) are computed when its run opens,
// paused afterwards with a hostile reason.
type listStore struct {
	path       string
	catalog    *baton.Catalog
	b          backend.Backend
	submission ledger.RunID
	sweep      ledger.RunID
}

const (
	sweepItems      = 300
	submissionItems = 70
	deadOrder       = "order-0007"
)

func newListStore(t *testing.T) *listStore {
	t.Helper()
	ctx := t.Context()
	s := &listStore{path: filepath.Join(t.TempDir(), "baton.db")}
	process := baton.ProcessorFunc(func(_ context.Context, task baton.Task) ([]byte, error) {
		if task.Asset == deadOrder {
			return nil, baton.Permanent(errors.New("rejected " + hostile))
		}
		return []byte(`{}`), nil
	})
	orders := baton.Job{Name: "orders", Schedule: "rate(1 hour)", Assets: []string{"reconcile"}, Processor: process}
	var all []baton.Item
	for i := range sweepItems {
		all = append(all, baton.Item{Name: fmt.Sprintf("acct-%04d", i)})
	}
	sweep := baton.Job{Name: "sweep", Schedule: "rate(1 minute)", Items: baton.ItemList(100, all...), Processor: process}
	s.catalog = baton.MustCatalog(orders, sweep)
	b, err := sqlitebackend.Open(ctx, s.path)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	s.b = b
	eng, err := exec.New(b, exec.Options{Catalog: s.catalog, Owner: "fixture", Consumers: 2})
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(cctx) })
	defer func() { cancel(); wg.Wait() }()

	var items []baton.Item
	for i := range submissionItems {
		items = append(items, baton.Item{Name: fmt.Sprintf("order-%04d", i), Payload: []byte(`{"secret":"never shown"}`)})
	}
	sum, err := eng.Coordinator.Submit(ctx, coordinator.Submission{Job: "orders", Key: "order-42", Items: items})
	require.NoError(t, err)
	s.submission = sum.Run
	tick := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	sum, err = eng.Trigger(ctx, "sweep", tick, false)
	require.NoError(t, err)
	s.sweep = sum.Run
	for _, id := range []ledger.RunID{s.submission, s.sweep} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			run, err := ledger.GetRunOf(ctx, b.Ledger, id)
			require.NoError(c, err)
			require.True(c, run.State.Finished(), "%s is %s", id, run.State)
		}, 30*time.Second, 20*time.Millisecond)
	}
	pauser, ok := lease.PauserOf(b.Leases)
	require.True(t, ok)
	_, err = pauser.SetPause(ctx, lease.SetPauseParams{Job: "sweep", Paused: true, By: "ops", Reason: "migration " + hostile, Now: time.Now()})
	require.NoError(t, err)
	return s
}

// serve runs `baton ui` on s with args and returns its base URL.
func (s *listStore) serve(t *testing.T, args ...string) string {
	t.Helper()
	return serveUI(t, s.catalog, append([]string{"--store", s.path}, args...)...)
}
