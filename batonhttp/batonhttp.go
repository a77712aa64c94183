// Package batonhttp serves a catalog of jobs over HTTP, for container
// platforms: Cloud Run, Knative, Azure Container Apps, a Kubernetes
// Deployment. The coordinator is an HTTP endpoint triggered by a
// CloudEvent (a Knative PingSource, Eventarc) or a plain JSON body (a
// Cloud Scheduler HTTP job); the consumers pull work from the engine's
// queue, as `baton run` does locally, and may also take work pushed to
// them one message a request. A container's main is a few lines:
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
//		defer stop()
//		b, err := batonhttp.OpenBackend(ctx, "sqlite", &batonhttp.BackendOptions{Store: "/data/baton.db"})
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer b.Close()
//		err = batonhttp.Serve(ctx, catalog, &batonhttp.ServeOptions{Addr: ":8080", Options: batonhttp.Options{
//			Backend: b, Auth: batonhttp.Auth{OIDCIssuer: "https://accounts.google.com", OIDCAudience: serviceURL,
//				OIDCEmails: []string{"scheduler@my-project.iam.gserviceaccount.com"}}}})
//		if err != nil {
//			log.Fatal(err)
//		}
//	}
//
// `baton serve` (package batoncli) is the same server with flags.
//
// # Endpoints
//
// Serve and NewHandler route:
//
//   - POST / and /trigger: the coordinator (NewCoordinatorHandler). A
//     CloudEvent in binary or structured mode whose data is the trigger
//     ({"job"}; the tick is then the event's time attribute, which a
//     PingSource sets to its schedule's tick), or a plain JSON trigger in
//     the shapes the Lambda coordinator accepts: {"job"},
//     {"job", "scheduledTime"}, a replay {"job", "scheduledTime",
//     "force"}. Decoding is strict: an unknown or misspelt field, a job
//     not in the catalog, a bad, future or stale time is answered 400 with
//     a JSON body {"error": "..."} naming what is wrong.
//   - POST /push: one work message as a CloudEvent (NewPushHandler), its
//     data the message as the coordinator enqueued it, or a Pub/Sub
//     messagePublished event wrapping it, or a standard Pub/Sub push
//     subscription's request ({"message": {"data", "attributes",
//     "messageId"}, "subscription"}, its messageId the delivery's id).
//   - GET /healthz (liveness) and GET /readyz (the engine answers a read).
//
// Answers are chosen so that a retrying sender (Cloud Scheduler, a
// PingSource, a push subscription) retries only what a retry can fix:
// 200 done; 400 and 401 final; 503 (with Retry-After) for a fan-out to
// resume, a tick waiting behind another coordinator's lease, a pushed
// message to deliver again, or a server stopping; 500 for a store error.
//
// # Callers
//
// The work endpoints verify their caller (Auth): an OIDC token in
// "Authorization: Bearer", verified against the issuer's keys (JWKS) with
// issuer, audience and expiry checks, and optionally the caller's email
// (what Cloud Scheduler and Pub/Sub push send); or a shared secret,
// compared in constant time; or none, when the platform verifies callers
// itself. With nothing configured the handlers serve loopback callers
// only, and Serve refuses to listen on an address that is not loopback.
//
// # Stopping
//
// When Serve's or RunConsumer's context ends (SIGTERM), readiness fails
// and new work is refused at once; work in flight gets a grace period
// (ConsumerOptions.Grace, 8s by default, within the 10s Cloud Run and
// Knative give) to finish; what is still running then is given back
// without a verdict: its claim is released in the ledger and its message
// made visible again (pulled) or answered 503 (pushed), for another
// instance to finish.
//
// # Engines
//
// OpenBackend opens an engine by name or URL: "sqlite" (the embedded
// store, one file; for a single instance with a volume) or "postgres"
// (every store and the work queue in one PostgreSQL database, for any
// number of instances: BackendOptions.DSN, or $BATON_PG_DSN), and any
// other engine the binary links (package engines). The handlers work the
// same on every engine.
package batonhttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	// The engines batonhttp links (Engines); a binary may link more.
	_ "github.com/batonhq/baton/internal/backend/postgresbackend"
	_ "github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/telemetry"
)

// Backend is an open engine: where runs, items, leases and queues live.
type Backend struct{ b backend.Backend }

// BackendOptions say where an engine's state is.
type BackendOptions struct {
	// Store is the embedded store's SQLite file ("sqlite"); "" means
	// var/baton.db.
	Store string
	// DSN is the PostgreSQL connection string ("postgres"),
	// postgres://user:password@host:port/database; "" means
	// $BATON_PG_DSN.
	DSN string
	// Setup applies the PostgreSQL schema's migrations and creates the
	// queues before opening, as 'baton setup --backend postgres' does
	// (idempotent, safe from several instances at once). Without it a
	// database not set up is refused. The embedded store always sets
	// itself up.
	Setup bool
	// TracerProvider records each statement of the store (PostgreSQL's,
	// or the embedded SQLite store's) as a span; nil: the global
	// provider. Give the same as Options.TracerProvider.
	TracerProvider trace.TracerProvider
}

// Engines are the engines batonhttp links itself. OpenBackend accepts
// every engine the binary links: these, and any other it imports (see
// package engines: the aws engine with
// _ "github.com/batonhq/baton/engines/aws").
var Engines = []string{"sqlite", "postgres"}

// OpenBackend opens the engine called name (see Engines), or named by its
// URL (sqlite:///path/to.db, postgres://user:pass@host/db,
// aws://?table=T&queue=URL), or the SQLite file at a path. The embedded
// store creates its tables as needed; a PostgreSQL database must be set
// up (BackendOptions.Setup, or 'baton setup --backend postgres'). An
// unknown name is an error that lists the linked engines.
func OpenBackend(ctx context.Context, name string, o *BackendOptions) (*Backend, error) {
	if o == nil {
		o = &BackendOptions{}
	}
	b, err := backend.Open(ctx, name, backend.Config{Store: o.Store, DSN: o.DSN, Setup: o.Setup, TracerProvider: o.TracerProvider})
	if err != nil {
		return nil, fmt.Errorf("batonhttp: %w", err)
	}
	return &Backend{b}, nil
}

// Name is the engine's name.
func (b *Backend) Name() string { return b.b.Name }

// Close releases the engine's resources.
func (b *Backend) Close() error { return b.b.Close() }

// Auth says how the handlers verify their caller: OIDC, a shared secret,
// or None; see the package documentation.
type Auth struct {
	// OIDCIssuer is the tokens' issuer: https://accounts.google.com for
	// Cloud Scheduler and Pub/Sub push.
	OIDCIssuer string
	// OIDCAudience is the audience the tokens must carry (the service's
	// URL on Cloud Run).
	OIDCAudience string
	// OIDCJWKSURL is the issuer's key set; "" discovers it from the
	// issuer's /.well-known/openid-configuration.
	OIDCJWKSURL string
	// OIDCEmails, when set, are the accepted callers (the token's verified
	// email claim). Set it with Google as issuer: Google signs tokens of
	// any audience for any service account.
	OIDCEmails []string
	// Secret is a shared secret (16 bytes or more), sent as
	// "Authorization: Bearer <secret>" or in SecretHeader when set.
	Secret       string
	SecretHeader string
	// None accepts every caller: for a platform that verifies callers
	// itself (Cloud Run without unauthenticated access).
	None bool
}

func (a Auth) internal(now func() time.Time) httpapp.Auth {
	return httpapp.Auth{
		OIDCIssuer: a.OIDCIssuer, OIDCAudience: a.OIDCAudience, OIDCJWKSURL: a.OIDCJWKSURL, OIDCEmails: a.OIDCEmails,
		Secret: a.Secret, SecretHeader: a.SecretHeader, None: a.None, NowFunc: now,
	}
}

// Options configure the handlers.
type Options struct {
	Backend *Backend // required
	Auth    Auth
	// TriggerSkew is how far in the future a trigger's time may be; 0
	// means one minute. TriggerAge, when positive, refuses scheduled
	// triggers older than that (a stale delivery); replays are exempt.
	// baton serve and the Lambda coordinator set 6h; 0 is no bound.
	TriggerSkew, TriggerAge time.Duration
	// Timeout bounds one request's work: a fan-out, a pushed message; 0
	// means 60s. Keep it below the sender's own deadline (a push
	// subscription's acknowledgement deadline).
	Timeout time.Duration
	Logger  *slog.Logger     // nil: discard
	NowFunc func() time.Time // nil: time.Now
	// TracerProvider records a span per trigger and per item (see
	// docs/tracing.md); a request's W3C trace context (traceparent) is
	// their parent. nil: the global provider, a no-op until one is set.
	TracerProvider trace.TracerProvider
	// MeterProvider records the item and trigger metrics; nil: the global
	// provider.
	MeterProvider metric.MeterProvider
}

func (o *Options) params(catalog *baton.Catalog) (httpapp.Params, error) {
	if catalog == nil {
		return httpapp.Params{}, errors.New("batonhttp: nil catalog")
	}
	if o == nil || o.Backend == nil {
		return httpapp.Params{}, errors.New("batonhttp: no backend (Options.Backend, from OpenBackend)")
	}
	return httpapp.Params{
		Catalog: catalog, Backend: o.Backend.b, TriggerSkew: o.TriggerSkew, TriggerAge: o.TriggerAge,
		Timeout: o.Timeout, Logger: o.Logger, NowFunc: o.NowFunc,
		Telemetry: newTelemetry(o.TracerProvider, o.MeterProvider, o.Backend.b.Name),
	}, nil
}

// newTelemetry is the telemetry of the providers (nil: the global ones)
// on engine.
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, engine string) *telemetry.Telemetry {
	return telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Engine: engine})
}

// withAuth prepares o.Auth (an OIDC issuer's discovery, within 10s).
func (o *Options) withAuth(p httpapp.Params) (httpapp.Params, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	au, err := httpapp.NewAuthenticator(ctx, o.Auth.internal(o.NowFunc))
	if err != nil {
		return p, fmt.Errorf("batonhttp: %w", err)
	}
	p.Auth = au
	return p, nil
}

// NewCoordinatorHandler returns the coordinator endpoint for catalog on
// o.Backend: a POST with a CloudEvent or a plain JSON trigger runs the
// coordinator for its tick and answers with the run's summary (JSON).
func NewCoordinatorHandler(catalog *baton.Catalog, o *Options) (http.Handler, error) {
	p, err := o.params(catalog)
	if err != nil {
		return nil, err
	}
	if p, err = o.withAuth(p); err != nil {
		return nil, err
	}
	return httpapp.NewCoordinator(p)
}

// NewPushHandler returns the push endpoint: a POST with one work message
// as a CloudEvent or a Pub/Sub push request is vouched for by the ledger,
// claimed, processed and recorded by the same consumer as pulled
// messages; a malformed or unvouched one, or an unusable Pub/Sub envelope
// (whole), is dead-lettered with its reason to the engine's dead-letter
// queue and answered 200, since a push system redelivers any other answer. A processor's heartbeats (baton.Task.Heartbeat)
// extend its claim in the ledger; Options.Timeout bounds the request, so
// keep it below the push subscription's acknowledgement deadline. It
// answers 200 when the message is done with, 503 when it is to be
// delivered again.
func NewPushHandler(catalog *baton.Catalog, o *Options) (http.Handler, error) {
	p, err := o.params(catalog)
	if err != nil {
		return nil, err
	}
	if p, err = o.withAuth(p); err != nil {
		return nil, err
	}
	return httpapp.NewPush(p)
}

// NewHandler returns every route: the coordinator at / and /trigger, the
// push endpoint at /push, /healthz and /readyz. Serve serves it; use it
// to mount baton in a server of your own (without Serve's graceful stop
// of pushed work).
func NewHandler(catalog *baton.Catalog, o *Options) (http.Handler, error) {
	p, err := o.params(catalog)
	if err != nil {
		return nil, err
	}
	if p, err = o.withAuth(p); err != nil {
		return nil, err
	}
	return httpapp.NewMux(p)
}

// ConsumerOptions tune the pull consumers.
type ConsumerOptions struct {
	// Consumers is the number of batches processed at once; 0 means 4.
	Consumers int
	// BatchSize is the most messages per batch; 0 means 10. Up to 10, or
	// up to 100 on PostgreSQL, whose batch of messages is received,
	// claimed, completed and deleted a few statements per batch.
	BatchSize int
	// BatchTimeout is each batch's deadline; 0 means 30s.
	BatchTimeout time.Duration
	// RetryDelay makes failed and given-back messages visible again after
	// this long; 0 means 1s.
	RetryDelay time.Duration
	// Grace is how long work in flight may finish once the context ends
	// before it is given back; 0 means 8s.
	Grace   time.Duration
	Logger  *slog.Logger     // nil: discard
	NowFunc func() time.Time // nil: time.Now
	// TracerProvider and MeterProvider: as Options'.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

func (o *ConsumerOptions) worker() httpapp.WorkerParams {
	if o == nil {
		return httpapp.WorkerParams{}
	}
	return httpapp.WorkerParams{Consumers: o.Consumers, BatchSize: o.BatchSize, BatchTimeout: o.BatchTimeout, RetryDelay: o.RetryDelay, Grace: o.Grace}
}

// RunConsumer runs the pull consumers of catalog on b's work queue until
// ctx ends, then stops gracefully (see Stopping in the package
// documentation) and returns.
func RunConsumer(ctx context.Context, catalog *baton.Catalog, b *Backend, o *ConsumerOptions) error {
	if catalog == nil {
		return errors.New("batonhttp: nil catalog")
	}
	if b == nil {
		return errors.New("batonhttp: nil backend")
	}
	p := httpapp.Params{Catalog: catalog, Backend: b.b, Telemetry: newTelemetry(nil, nil, b.b.Name)}
	if o != nil {
		p.Logger, p.NowFunc = o.Logger, o.NowFunc
		p.Telemetry = newTelemetry(o.TracerProvider, o.MeterProvider, b.b.Name)
	}
	return httpapp.RunWorkers(ctx, p, o.worker())
}

// ServeOptions configure Serve.
type ServeOptions struct {
	// Addr is where to listen; "" means :8080, or :$PORT when PORT is set
	// (as Cloud Run and Knative set it) — an address that is not
	// loopback, so Auth must say how callers are verified.
	Addr string
	Options
	// Consumer tunes the pull consumers; NoPull runs none (push or
	// coordinator only).
	Consumer ConsumerOptions
	NoPull   bool
}

// Serve serves every route and runs the pull consumers until ctx ends,
// then stops gracefully (see Stopping in the package documentation).
func Serve(ctx context.Context, catalog *baton.Catalog, o *ServeOptions) error {
	if o == nil {
		o = &ServeOptions{}
	}
	p, err := o.Options.params(catalog)
	if err != nil {
		return err
	}
	if o.Consumer.Logger != nil && p.Logger == nil {
		p.Logger = o.Consumer.Logger
	}
	if o.TracerProvider == nil && o.MeterProvider == nil && (o.Consumer.TracerProvider != nil || o.Consumer.MeterProvider != nil) {
		p.Telemetry = newTelemetry(o.Consumer.TracerProvider, o.Consumer.MeterProvider, p.Backend.Name)
	}
	return httpapp.Serve(ctx, httpapp.ServeParams{
		Params: p, Addr: ListenAddr(o.Addr, nil), AuthConfig: o.Auth.internal(o.NowFunc),
		Workers: o.Consumer.worker(), Pull: !o.NoPull,
	})
}

// ListenAddr returns addr, or when it is empty :$PORT (getenv("PORT"),
// nil: the process's environment) or :8080.
func ListenAddr(addr string, getenv func(string) string) string {
	return httpapp.ListenAddr(addr, getenv)
}
