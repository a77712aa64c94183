package httpapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/ledger"
)

// Params are what the handlers work on.
type Params struct {
	Catalog *baton.Catalog
	Backend backend.Backend
	// Auth verifies callers; nil: loopback callers only.
	Auth *Authenticator
	// TriggerSkew is how far in the future a trigger time may be; 0 means
	// lambdaapp.DefaultTriggerSkew. TriggerAge, when positive, bounds how
	// old a scheduled trigger may be (replays are exempt).
	TriggerSkew, TriggerAge time.Duration
	// Timeout bounds one request's work (a fan-out, a pushed message); 0
	// means 60s.
	Timeout time.Duration
	// Owner prefixes lease and claim owners; "" means "http".
	Owner   string
	Logger  *slog.Logger
	NowFunc func() time.Time
	// Stop, when closed, ends the grace period of a shutdown: pushed
	// messages still being processed are given back (consumer.Stop).
	Stop <-chan struct{}
	// Draining, when set and true, makes the handlers refuse new work
	// (503) and readiness fail: the server is stopping.
	Draining *atomic.Bool
}

func (p Params) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p Params) now() time.Time {
	if p.NowFunc != nil {
		return p.NowFunc()
	}
	return time.Now()
}

func (p Params) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return time.Minute
}

func (p Params) owner() string {
	if p.Owner != "" {
		return p.Owner
	}
	return "http"
}

func (p Params) draining() bool { return p.Draining != nil && p.Draining.Load() }

func (p Params) validate() error {
	if p.Catalog == nil {
		return errors.New("http handlers: no job catalog")
	}
	if p.Backend.Ledger == nil || p.Backend.Work == nil {
		return errors.New("http handlers: the backend has no ledger or work queue")
	}
	return nil
}

// errorBody is the JSON body of every refusal.
type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(w, code, errorBody{Error: err.Error()})
}

// admit answers what every work endpoint refuses before reading the
// request: a method other than POST, an unverified caller, a stopping
// server. ok is false when it answered.
func (p Params) admit(w http.ResponseWriter, r *http.Request) (ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed: send a POST", r.Method))
		return false
	}
	auth := p.Auth
	if auth == nil {
		auth = &Authenticator{kind: "loopback"}
	}
	if err := auth.Verify(r); err != nil {
		p.logger().WarnContext(r.Context(), "caller refused", slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr), slog.Any("error", err))
		writeError(w, http.StatusUnauthorized, err)
		return false
	}
	if p.draining() {
		writeError(w, http.StatusServiceUnavailable, errors.New("stopping: send it again (another instance takes it)"))
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	return true
}

// CoordinatorResponse is the coordinator endpoint's answer to a trigger
// it ran: the Lambda coordinator's response, with the event's identity
// when it came as a CloudEvent.
type CoordinatorResponse struct {
	lambdaapp.CoordinatorResponse
	EventID   string `json:"event_id,omitempty"`
	EventMode string `json:"event_mode,omitempty"` // binary or structured
}

type coordinatorHandler struct {
	p Params
	h *lambdaapp.CoordinatorHandler
}

// NewCoordinator returns the coordinator endpoint: a POST carrying a
// CloudEvent or a plain JSON trigger (DecodeTriggerRequest) runs the
// coordinator for its tick. Answers: 200 with the run's summary; 400 with
// the reason for a request no retry can fix; 401 for an unverified
// caller; 503 (retry) when the fan-out stopped before its end or the tick
// waits behind another holder's lease, or the server is stopping; 500
// (retry) for a store error.
func NewCoordinator(p Params) (http.Handler, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Backend.Leases == nil {
		return nil, errors.New("http coordinator: the backend has no lease store")
	}
	if p.TriggerSkew == 0 {
		p.TriggerSkew = lambdaapp.DefaultTriggerSkew
	}
	b := p.Backend
	h, err := lambdaapp.NewCoordinatorHandler(lambdaapp.HandlerParams{
		Jobs: p.Catalog, Leases: b.Leases, Ledger: b.Ledger, Queue: b.Work,
		TriggerSkew: p.TriggerSkew, TriggerAge: p.TriggerAge,
		FunctionName: p.owner() + "/coordinator", Logger: p.Logger, NowFunc: p.NowFunc,
	})
	if err != nil {
		return nil, err
	}
	return &coordinatorHandler{p: p, h: h}, nil
}

func (c *coordinatorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.p.admit(w, r) {
		return
	}
	tr, err := DecodeTriggerRequest(r, TriggerRequestParams{
		Jobs: c.p.Catalog.Names(), Now: c.p.now(), Skew: c.p.TriggerSkew, MaxAge: c.p.TriggerAge,
	})
	if err != nil {
		c.p.logger().WarnContext(r.Context(), "trigger refused", slog.Any("error", err))
		writeError(w, http.StatusBadRequest, err)
		return
	}
	// A client that goes away does not cut the fan-out short: it ends
	// with its deadline, resumable either way.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), c.p.timeout())
	defer cancel()
	resp, err := c.h.Handle(ctx, tr.Payload)
	switch {
	case errors.Is(err, lambdaevent.ErrBadTrigger):
		writeError(w, http.StatusBadRequest, err)
		return
	case errors.Is(err, lambdaapp.ErrIncomplete):
		writeError(w, http.StatusServiceUnavailable, err)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	out := CoordinatorResponse{CoordinatorResponse: resp, EventID: tr.EventID, EventMode: tr.Mode}
	if tr.Mode != "" {
		out.Source = SourceCloudEvent
	}
	writeJSON(w, http.StatusOK, out)
}

// newConsumer returns the core consumer the push endpoint and the pull
// workers share the settings of.
func newConsumer(p Params, stop <-chan struct{}) *consumer.Consumer {
	b := p.Backend
	c := &consumer.Consumer{
		Ledger: b.Ledger, Queue: b.Work, MaxReceives: b.MaxReceives, Jobs: p.Catalog, Effects: b.Effects,
		Owner: p.owner() + "/push", NowFunc: p.NowFunc, Logger: p.Logger, Runs: &consumer.RunCache{}, Stop: stop,
	}
	if b.DeadLetter != nil {
		c.DeadLetter = b.DeadLetter
	}
	return c
}

// readinessProbe is the job name the readiness check reads a run of: any
// answer from the ledger, "not found" included, shows it is reachable.
const readinessProbe = "baton-readiness-probe"

// NewHealth returns the liveness endpoint (/healthz): 200 while the
// process serves.
func NewHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// NewReady returns the readiness endpoint (/readyz): 200 when the ledger
// answers a read within 2s, 503 with the reason when it does not or the
// server is stopping.
func NewReady(p Params) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.draining() {
			writeError(w, http.StatusServiceUnavailable, errors.New("stopping"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		_, err := p.Backend.Ledger.GetRun(ctx, readinessProbe, time.Unix(0, 0).UTC())
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("backend %s not reachable: %v", p.Backend.Name, err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "backend": p.Backend.Name})
	})
}
