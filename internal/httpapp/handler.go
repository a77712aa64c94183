package httpapp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/telemetry"
)

// Params are what the handlers work on.
type Params struct {
	Catalog *baton.Catalog
	Backend backend.Backend
	// Auth verifies callers; nil: loopback callers only.
	Auth *Authenticator
	// TriggerSkew is how far in the future a trigger time may be; 0 means
	// DefaultTriggerSkew. TriggerAge, when positive, bounds how
	// old a scheduled trigger may be (replays are exempt).
	TriggerSkew, TriggerAge time.Duration
	// Timeout bounds one request's work (a fan-out, a pushed message); 0
	// means 60s.
	Timeout time.Duration
	// Owner prefixes lease and claim owners, unique per process; "" means
	// host/pid.
	Owner   string
	Logger  *slog.Logger
	NowFunc func() time.Time
	// Stop, when closed, ends the grace period of a shutdown: pushed
	// messages still being processed are given back (consumer.Stop).
	Stop <-chan struct{}
	// Draining, when set and true, makes the handlers refuse new work
	// (503) and readiness fail: the server is stopping.
	Draining *atomic.Bool
	// Telemetry is the OpenTelemetry tracer and meter of the coordinator
	// and the consumers; nil: the global providers.
	Telemetry *telemetry.Telemetry
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
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
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

// DefaultTriggerSkew is how far in the future a trigger's time may be
// when Params.TriggerSkew is 0 (the Lambda coordinator's default).
const DefaultTriggerSkew = time.Minute

// ErrIncomplete matches the coordinator endpoint's error when the tick is
// not fully fanned out yet: the fan-out stopped before its end, or the
// tick waits behind another holder's lease. A retry resumes it (503). It
// is exec.ErrIncomplete, the same for every transport.
var ErrIncomplete = exec.ErrIncomplete

// CoordinatorResponse is the coordinator endpoint's answer to a trigger it
// ran: the one response of every transport (exec.CoordinatorResponse,
// the Lambda coordinator's), with the event's identity when the trigger
// came as a CloudEvent and the request's id.
type CoordinatorResponse = exec.CoordinatorResponse

// Holder is a lease holder as reported in a response.
type Holder = exec.Holder

type coordinatorHandler struct {
	p    Params
	core coordinator.Coordinator // built once (exec.Core); Owner set per request
}

// NewCoordinator returns the coordinator endpoint: a POST carrying a
// CloudEvent or a plain JSON trigger (DecodeTriggerRequest) runs the
// coordinator for its tick. Answers: 200 with the run's summary; 400 with
// the reason for a request no retry can fix; 401 for an unverified
// caller; 503 (retry) when the fan-out stopped before its end, the tick
// waits behind another holder's lease, or the server is stopping; 500
// (retry) for a store error.
func NewCoordinator(p Params) (http.Handler, error) {
	return newCoordinator(p, p.build)
}

// newCoordinator is NewCoordinator on the core build returns.
func newCoordinator(p Params, build func() (*exec.Core, error)) (*coordinatorHandler, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Backend.Leases == nil {
		return nil, errors.New("http coordinator: the backend has no lease store")
	}
	if p.TriggerSkew == 0 {
		p.TriggerSkew = DefaultTriggerSkew
	}
	core, err := build()
	if err != nil {
		return nil, fmt.Errorf("http coordinator: %w", err)
	}
	co, err := core.Coordinator(p.owner() + "/coordinator")
	if err != nil {
		return nil, fmt.Errorf("http coordinator: %w", err)
	}
	return &coordinatorHandler{p: p, core: *co}, nil
}

// build builds the core the handlers work on (exec.Build) on p.Backend:
// each job's messages to its queue (exec.JobQueues), the chain starter,
// the consumers' caches. A handler builds it once, at construction, and
// the handlers of one mux (NewMux) share one.
func (p Params) build() (*exec.Core, error) {
	parts, _, err := exec.PartsOf(context.Background(), p.Backend, p.Catalog)
	if err != nil {
		return nil, err
	}
	parts.Owner, parts.NowFunc, parts.Logger, parts.Telemetry = p.owner(), p.NowFunc, p.logger(), p.Telemetry
	return exec.Build(parts)
}

func (c *coordinatorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.p.admit(w, r) {
		return
	}
	log := c.p.logger()
	now := c.p.now()
	params := TriggerRequestParams{Jobs: c.p.Catalog.Names(), Unscheduled: lambdaevent.Unscheduled(c.p.Catalog), Now: now, Skew: c.p.TriggerSkew, MaxAge: c.p.TriggerAge}
	req, err := DecodeTriggerRequest(r, params)
	var tr lambdaevent.Trigger
	if err == nil {
		tr, err = lambdaevent.DecodeTrigger(params.lambda(req.Payload))
	}
	if err != nil {
		log.WarnContext(r.Context(), "trigger refused", slog.Any("error", err))
		writeError(w, http.StatusBadRequest, err)
		return
	}
	source := string(tr.Source)
	if req.Mode != "" {
		source = SourceCloudEvent
	}
	log = log.With(slog.String("job", tr.Job), slog.String("source", source), slog.String("event_id", req.EventID))
	// A client that goes away does not cut the fan-out short: it ends
	// with its deadline, resumable either way.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), c.p.timeout())
	defer cancel()
	ctx = telemetry.FromHeader(ctx, r.Header) // a caller's trace, joined
	core := c.core
	id := requestID()
	core.Owner = fmt.Sprintf("%s/coordinator/%s", c.p.owner(), id)
	sum, err := core.Run(ctx, coordinator.Trigger{Job: tr.Job, At: tr.At, Force: tr.Force, Deadline: now.Add(c.p.timeout())})
	if err != nil {
		log.ErrorContext(ctx, "coordinator failed", slog.Any("error", err))
		writeError(w, http.StatusInternalServerError, fmt.Errorf("job %s: %w", tr.Job, err))
		return
	}
	if err := exec.Incomplete(sum); err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	out := exec.Respond(sum)
	out.Job, out.Source, out.Force, out.RequestID, out.EventID, out.EventMode = tr.Job, source, tr.Force, id, req.EventID, req.Mode
	log.InfoContext(ctx, "trigger run", slog.String("outcome", out.Outcome), slog.String("run", out.Run), slog.Int("enqueued", out.Enqueued))
	writeJSON(w, http.StatusOK, out)
}

// requestID returns a random id for a request's lease owner.
func requestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
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
