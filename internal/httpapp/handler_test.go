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

	"github.com/batonhq/baton/examples/fx"
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
