package httpapp_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/queue"
)

// The end-to-end tests also run on the PostgreSQL engine: each on a fresh
// database of the test binary's server, set up as 'baton setup --backend
// postgres' sets it up.
func init() {
	engines = append(engines, struct {
		name string
		open func(t *testing.T) backend.Backend
	}{"postgres", func(t *testing.T) backend.Backend {
		dsn := pgtest.DSN(t)
		_, err := postgresbackend.Setup(t.Context(), dsn, 0)
		require.NoError(t, err)
		b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}})
}

// TestMain stops the PostgreSQL server the postgres engine's tests started.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// TestPostgresEndToEnd is the twin of the AWS path's end-to-end test
// (internal/e2e), over HTTP on the PostgreSQL engine: a tick and four
// concurrent duplicates of it open one run; the pull consumers process
// every asset once and derive DXY; a malformed message put on the work
// queue by someone else is dead-lettered by them with its reason.
func TestPostgresEndToEnd(t *testing.T) {
	t.Parallel()
	var b backend.Backend
	for _, eng := range engines {
		if eng.name == "postgres" {
			b = eng.open(t)
		}
	}
	require.NotNil(t, b.Ledger)
	s := serve(t, b, fx.Catalog(nil), true, httpapp.WorkerParams{Consumers: 2, RetryDelay: 50 * time.Millisecond})

	require.NoError(t, b.Work.SendBatch(t.Context(), []queue.Message{{ID: "bad", Body: []byte(`{"v":1,"key":"fx@poison"}`)}}))

	nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	var wg sync.WaitGroup
	outcomes := make([]string, 5)
	for i := range outcomes {
		wg.Go(func() {
			h, body := ceBinary(fmt.Sprintf("tick-%d", i), nominal, `{"job":"fx"}`)
			r := s.post(t, "/", h, body)
			outcomes[i] = fmt.Sprint(r.code, " ", r.body["outcome"])
		})
	}
	wg.Wait()
	opened := 0
	for _, o := range outcomes {
		if o == "200 opened" {
			opened++
		}
	}
	require.Equal(t, 1, opened, "one tick, one run: %v", outcomes)

	run, items := waitSettled(t, b, "fx", nominal)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 1, run.ID.Generation)
	require.Len(t, items, len(fx.Assets)+1)
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.String())
		require.Equal(t, 1, it.Attempt, "%s processed once", it.Key)
	}

	require.Eventually(t, func() bool {
		ps, err := queue.OpsOf(b.DeadLetter).Peek(t.Context(), 0)
		require.NoError(t, err)
		return len(ps) == 1 && strings.Contains(string(ps[0].Body), "poison") && ps[0].Attributes[message.AttrError] != ""
	}, 20*time.Second, 20*time.Millisecond, "the malformed message dead-lettered with its reason")
}
