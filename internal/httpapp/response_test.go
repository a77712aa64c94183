package httpapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/lambdaapp"
)

// The coordinator endpoint answers with the Lambda coordinator's
// response (one format, exec.CoordinatorResponse), the CloudEvent's
// identity and the request's id added; its incomplete fan-outs match the
// one ErrIncomplete of every transport.
func TestCoordinatorAnswersTheLambdaResponse(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, httpapp.ErrIncomplete, lambdaapp.ErrIncomplete, "one ErrIncomplete for HTTP and Lambda")
	require.ErrorIs(t, lambdaapp.ErrIncomplete, exec.ErrIncomplete)

	b := engines[0].open(t)
	ok := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte(`{}`), nil })
	catalog := baton.MustCatalog(baton.Job{Name: "fx", Schedule: "rate(1 minute)", Assets: []string{"a", "b"}, Processor: ok})
	s := serve(t, b, catalog, false, httpapp.WorkerParams{})
	nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	h, body := ceBinary("tick-1", nominal, `{"job":"fx"}`)
	req, err := http.NewRequest(http.MethodPost, s.url+"/", strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	req.Header.Set("Authorization", "Bearer "+testSecret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)

	var out lambdaapp.CoordinatorResponse
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&out), "the HTTP answer is the Lambda response: %s", raw)
	require.Equal(t, "fx", out.Job)
	require.Equal(t, httpapp.SourceCloudEvent, out.Source)
	require.Equal(t, "opened", out.Outcome)
	require.Equal(t, 2, out.Enqueued)
	require.True(t, out.Nominal.Equal(nominal), "nominal %s", out.Nominal)
	require.Equal(t, "tick-1", out.EventID)
	require.Equal(t, "binary", out.EventMode)
	require.NotEmpty(t, out.RequestID, "the request's id, as Lambda's request id")
}
