package batonhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/batonhttp"
	_ "github.com/batonhq/baton/engines/aws"
)

// OpenBackend opens every engine the binary links, by name or URL (this
// test binary adds aws by a blank import of engines/aws), and an unknown
// name is an error that lists them.
func TestOpenBackendEngines(t *testing.T) {
	_, err := batonhttp.OpenBackend(context.Background(), "oracle", nil)
	require.ErrorContains(t, err, `unknown engine "oracle" (engines: aws, postgres, sqlite; or a URL of scheme aws, postgres, postgresql, sqlite)`)

	path := filepath.Join(t.TempDir(), "url.db")
	b, err := batonhttp.OpenBackend(context.Background(), "sqlite://"+filepath.ToSlash(path), nil)
	require.NoError(t, err)
	require.Equal(t, "sqlite", b.Name())
	require.NoError(t, b.Close())
	require.FileExists(t, path)

	// The aws engine, linked: reached, and it asks for its table.
	t.Setenv("BATON_TABLE", "")
	t.Setenv("BATON_QUEUE_URL", "")
	_, err = batonhttp.OpenBackend(context.Background(), "aws", nil)
	require.ErrorContains(t, err, "batonhttp: aws: the table and the work queue are required")
}

func TestHandlerOptions(t *testing.T) {
	t.Parallel()
	b, err := batonhttp.OpenBackend(context.Background(), "sqlite", &batonhttp.BackendOptions{Store: filepath.Join(t.TempDir(), "b.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.Equal(t, "sqlite", b.Name())
	_, err = batonhttp.NewCoordinatorHandler(helloCatalog(nil, nil), nil)
	require.ErrorContains(t, err, "no backend")
	_, err = batonhttp.NewPushHandler(nil, &batonhttp.Options{Backend: b})
	require.ErrorContains(t, err, "nil catalog")
	_, err = batonhttp.NewHandler(helloCatalog(nil, nil), &batonhttp.Options{Backend: b, Auth: batonhttp.Auth{OIDCAudience: "https://x"}})
	require.ErrorContains(t, err, "OIDC needs an issuer")

	// No auth configured: loopback callers only.
	h, err := batonhttp.NewHandler(helloCatalog(nil, nil), &batonhttp.Options{Backend: b})
	require.NoError(t, err)
	for remote, code := range map[string]int{"198.51.100.4:999": http.StatusUnauthorized, "127.0.0.1:999": http.StatusBadRequest} {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, code, rec.Code, remote)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
}

func TestServeRefusesAnOpenAddress(t *testing.T) {
	t.Parallel()
	b, err := batonhttp.OpenBackend(context.Background(), "sqlite", &batonhttp.BackendOptions{Store: filepath.Join(t.TempDir(), "b.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	err = batonhttp.Serve(context.Background(), helloCatalog(nil, nil), &batonhttp.ServeOptions{Addr: ":0", Options: batonhttp.Options{Backend: b}})
	require.ErrorContains(t, err, "listening on :0, which is not loopback, needs caller verification")
}

func TestListenAddr(t *testing.T) {
	t.Parallel()
	env := func(port string) func(string) string { return func(string) string { return port } }
	require.Equal(t, "127.0.0.1:9", batonhttp.ListenAddr("127.0.0.1:9", env("1")))
	require.Equal(t, ":8081", batonhttp.ListenAddr("", env("8081")))
	require.Equal(t, ":8080", batonhttp.ListenAddr("", env("")))
}
