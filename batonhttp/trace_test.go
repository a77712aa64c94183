package batonhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/batonhttp"
)

// The user's tracer provider records the coordinator's span, a child of
// the caller's trace (the request's traceparent header).
func TestTracerProviderOption(t *testing.T) {
	t.Parallel()
	b, err := batonhttp.OpenBackend(context.Background(), "sqlite", &batonhttp.BackendOptions{Store: filepath.Join(t.TempDir(), "b.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h, err := batonhttp.NewCoordinatorHandler(helloCatalog(nil, nil), &batonhttp.Options{Backend: b, TracerProvider: tp})
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"job":"hello"}`))
	req.RemoteAddr = "127.0.0.1:999"
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())

	var coord sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "baton.coordinator" {
			coord = s
		}
	}
	require.NotNil(t, coord)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", coord.SpanContext().TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", coord.Parent().SpanID().String())
}
