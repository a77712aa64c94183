package httpapp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/httpapp"
)

func TestDrainingAndReadiness(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"))
	require.NoError(t, err)
	draining := &atomic.Bool{}
	au, err := httpapp.NewAuthenticator(context.Background(), httpapp.Auth{None: true})
	require.NoError(t, err)
	mux, err := httpapp.NewMux(httpapp.Params{Catalog: fx.Catalog(nil), Backend: b, Auth: au, Draining: draining})
	require.NoError(t, err)
	call := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec
	}
	require.Equal(t, http.StatusOK, call(http.MethodGet, httpapp.PathReady, "").Code)

	draining.Store(true)
	for _, path := range []string{"/", "/trigger", httpapp.PathPush} {
		rec := call(http.MethodPost, path, `{"job":"fx"}`)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, path)
		require.NotEmpty(t, rec.Header().Get("Retry-After"))
		require.Contains(t, rec.Body.String(), "stopping")
	}
	require.Equal(t, http.StatusServiceUnavailable, call(http.MethodGet, httpapp.PathReady, "").Code)
	require.Equal(t, http.StatusOK, call(http.MethodGet, httpapp.PathHealth, "").Code, "alive while stopping")

	// An engine that does not answer: not ready, with the reason.
	draining.Store(false)
	require.NoError(t, b.Close())
	rec := call(http.MethodGet, httpapp.PathReady, "")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), "backend sqlite not reachable")
}

// The routes of one mux share one core: the job queues are opened once
// for the coordinator and the push endpoint together, where each endpoint
// built its own before.
func TestMuxBuildsOneCore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := sqlitebackend.Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	opened := map[string]int{}
	open := b.JobQueueFunc
	b.JobQueueFunc = func(ctx context.Context, name string) (backend.Queue, error) {
		opened[name]++
		return open(ctx, name)
	}
	ok := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte(`{}`), nil })
	catalog := baton.MustCatalog(baton.Job{Name: "own", Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: ok, Queue: baton.JobQueue{Name: "q1"}})
	au, err := httpapp.NewAuthenticator(ctx, httpapp.Auth{None: true})
	require.NoError(t, err)
	_, err = httpapp.NewMux(httpapp.Params{Catalog: catalog, Backend: b, Auth: au})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"q1": 1}, opened)
}
