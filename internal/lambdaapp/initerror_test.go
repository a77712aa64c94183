package lambdaapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaapp"
)

func TestReportInitError(t *testing.T) {
	t.Parallel()
	type call struct {
		method, path, errType string
		body                  map[string]any
	}
	calls := make(chan call, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		calls <- call{r.Method, r.URL.Path, r.Header.Get("Lambda-Runtime-Function-Error-Type"), body}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	api := strings.TrimPrefix(srv.URL, "http://")

	require.NoError(t, lambdaapp.ReportInitError(context.Background(), api, errors.New("BATON_TABLE is not set")))
	c := <-calls
	require.Equal(t, http.MethodPost, c.method)
	require.Equal(t, "/2018-06-01/runtime/init/error", c.path)
	require.Equal(t, lambdaapp.InitErrorType, c.errType)
	require.Equal(t, "BATON_TABLE is not set", c.body["errorMessage"])
	require.Equal(t, lambdaapp.InitErrorType, c.body["errorType"])

	require.NoError(t, lambdaapp.ReportInitError(context.Background(), "", errors.New("x")), "outside Lambda: nothing to report")
}

func TestReportInitErrorRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	err := lambdaapp.ReportInitError(context.Background(), strings.TrimPrefix(srv.URL, "http://"), errors.New("x"))
	require.ErrorContains(t, err, "403")
}
