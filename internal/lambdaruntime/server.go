// Package lambdaruntime serves, on a loopback port, the Lambda Runtime API
// endpoints a function's bootstrap calls
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html), so a
// built function can run as a local process: its caller hands it events and
// reads its answers.
package lambdaruntime

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Invocation is one event handed to the function.
type Invocation struct {
	ID       string
	Payload  []byte
	Deadline time.Time
}

// Answer is what the function posted back: for an invocation, or its init
// error.
type Answer struct {
	ID        string // the invocation's; "" for an init error
	Kind      string // "response", "error" or "init"
	Body      []byte
	ErrorType string    // the Lambda-Runtime-Function-Error-Type header, if any
	At        time.Time // when the answer arrived
}

// Server is a running Runtime API. Send on Next to queue an invocation; a
// function's GET /next blocks until one is queued or the function goes away.
type Server struct {
	Addr       string          // host:port, the value of AWS_LAMBDA_RUNTIME_API
	Next       chan Invocation // buffered
	Answers    chan Answer     // responses and errors, in arrival order; buffered
	InitErrors chan Answer     // init errors, and a failure of the server itself; buffered
	Polled     chan time.Time  // when the function first asked for an event, and only then

	srv *http.Server
}

// buffer is how many invocations and answers the channels hold unread.
const buffer = 8

// Start serves the Runtime API on a loopback port. Invocations report
// functionARN as the invoked function's ARN. Close stops it.
func Start(functionARN string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		Addr:       ln.Addr().String(),
		Next:       make(chan Invocation, buffer),
		Answers:    make(chan Answer, buffer),
		InitErrors: make(chan Answer, 1),
		Polled:     make(chan time.Time, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.Polled <- time.Now():
		default:
		}
		select {
		case inv := <-s.Next:
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", inv.ID)
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.Deadline.UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", functionARN)
			h.Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(inv.Payload)
		case <-r.Context().Done(): // the process ended
		}
	})
	answer := func(kind string, to chan Answer) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			at := time.Now()
			body, _ := io.ReadAll(r.Body)
			to <- Answer{ID: r.PathValue("id"), Kind: kind, Body: body, ErrorType: r.Header.Get("Lambda-Runtime-Function-Error-Type"), At: at}
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"status":"OK"}`))
		}
	}
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", answer("response", s.Answers))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", answer("error", s.Answers))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", answer("init", s.InitErrors))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.InitErrors <- Answer{Kind: "init", Body: []byte("runtime API server: " + err.Error()), At: time.Now()}
		}
	}()
	return s, nil
}

// Close stops the server; a function blocked on GET /next sees its
// connection drop.
func (s *Server) Close() error { return s.srv.Close() }
