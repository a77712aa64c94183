package lambdaruntime_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaruntime"
)

const arn = "arn:aws:lambda:us-east-1:123456789012:function:fx"

// A bootstrap's round: poll for an event, answer it; and an init error.
func TestServer(t *testing.T) {
	t.Parallel()
	s, err := lambdaruntime.Start(arn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	base := "http://" + s.Addr + "/2018-06-01/runtime"

	deadline := time.UnixMilli(time.Now().Add(time.Minute).UnixMilli())
	s.Next <- lambdaruntime.Invocation{ID: "req-1", Payload: []byte(`{"a":1}`), Deadline: deadline}
	before := time.Now()
	resp, err := http.Get(base + "/invocation/next")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.JSONEq(t, `{"a":1}`, string(body))
	require.Equal(t, "req-1", resp.Header.Get("Lambda-Runtime-Aws-Request-Id"))
	require.Equal(t, strconv.FormatInt(deadline.UnixMilli(), 10), resp.Header.Get("Lambda-Runtime-Deadline-Ms"))
	require.Equal(t, arn, resp.Header.Get("Lambda-Runtime-Invoked-Function-Arn"))
	select {
	case at := <-s.Polled:
		require.False(t, at.Before(before.Add(-time.Second)))
	default:
		t.Fatal("the poll was not reported")
	}

	post := func(path, errType, body string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if errType != "" {
			req.Header.Set("Lambda-Runtime-Function-Error-Type", errType)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
	}
	post("/invocation/req-1/response", "", `{"ok":true}`)
	post("/invocation/req-2/error", "Handler.Failed", `{"errorMessage":"x"}`)
	post("/init/error", "Runtime.InitError", `{"errorMessage":"no table"}`)

	res := <-s.Answers
	require.Equal(t, "req-1", res.ID)
	require.Equal(t, "response", res.Kind)
	require.JSONEq(t, `{"ok":true}`, string(res.Body))
	require.False(t, res.At.IsZero())
	res = <-s.Answers
	require.Equal(t, "req-2", res.ID)
	require.Equal(t, "error", res.Kind)
	require.Equal(t, "Handler.Failed", res.ErrorType)
	res = <-s.InitErrors
	require.Equal(t, "init", res.Kind)
	require.Equal(t, "Runtime.InitError", res.ErrorType)
	require.JSONEq(t, `{"errorMessage":"no table"}`, string(res.Body))
	select {
	case extra := <-s.Answers:
		t.Fatalf("unexpected answer %+v", extra)
	default:
	}
}

// A poll with nothing queued waits; Close drops it.
func TestServerPollWaits(t *testing.T) {
	t.Parallel()
	s, err := lambdaruntime.Start(arn)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr + "/2018-06-01/runtime/invocation/next")
		if err == nil {
			_ = resp.Body.Close()
		}
		got <- err
	}()
	<-s.Polled // the handler is waiting for an invocation
	require.NoError(t, s.Close())
	require.Error(t, <-got, "the poll sees its connection drop")
}
