package benchreport

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// runtimeAPI serves the Lambda Runtime API endpoints a function calls
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html): it
// hands out queued invocations and records when each was answered.
type runtimeAPI struct {
	srv     *http.Server
	addr    string
	next    chan invocation
	results chan invocationResult
	polled  chan time.Time // the first GET /next, and only it
}

// invocation is one event handed to the function.
type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
}

// invocationResult is the function's answer to an invocation, or its
// init error (id "").
type invocationResult struct {
	id   string
	kind string // "response", "error" or "init"
	body []byte
	at   time.Time // when the answer arrived
}

// startRuntimeAPI serves the Runtime API on a loopback port.
func startRuntimeAPI() (*runtimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	api := &runtimeAPI{
		addr:    ln.Addr().String(),
		next:    make(chan invocation, 4),
		results: make(chan invocationResult, 4),
		polled:  make(chan time.Time, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		select {
		case api.polled <- time.Now():
		default:
		}
		select {
		case inv := <-api.next:
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:baton-bench")
			h.Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(inv.payload)
		case <-r.Context().Done():
		}
	})
	answer := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			at := time.Now()
			body, _ := io.ReadAll(r.Body)
			api.results <- invocationResult{id: r.PathValue("id"), kind: kind, body: body, at: at}
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"status":"OK"}`))
		}
	}
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", answer("response"))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", answer("error"))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", answer("init"))
	api.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := api.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			api.results <- invocationResult{kind: "init", body: []byte("runtime API server: " + err.Error())}
		}
	}()
	return api, nil
}

// Close stops the server; a function blocked on /next sees its connection
// drop.
func (api *runtimeAPI) Close() error { return api.srv.Close() }
