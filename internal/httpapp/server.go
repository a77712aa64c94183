package httpapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/exec"
)

// Routes of the server.
const (
	PathTrigger = "/"        // the coordinator (also /trigger)
	PathPush    = "/push"    // pushed work messages
	PathHealth  = "/healthz" // liveness
	PathReady   = "/readyz"  // readiness: the backend answers
)

// DefaultGrace is how long a stopping server lets work in flight finish
// before it gives back what is left: within the 10 s Cloud Run and
// Knative allow after SIGTERM by default.
const DefaultGrace = 8 * time.Second

// WorkerParams tune the pull workers.
type WorkerParams struct {
	// Consumers is the number of batches in flight at once; 0 means 4.
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
	// Grace is how long in-flight work may finish once ctx ends; then what
	// is left is given back (claims released, messages visible again
	// after RetryDelay). 0 means DefaultGrace.
	Grace time.Duration
}

func (w WorkerParams) grace() time.Duration {
	if w.Grace > 0 {
		return w.Grace
	}
	return DefaultGrace
}

// RunWorkers runs the pull consumers on p.Backend's work queue until ctx
// ends, then stops them gracefully: no message is received any more,
// batches in flight get w.Grace to finish, and what they have not
// finished by then is given back. It returns once every batch is done.
func RunWorkers(ctx context.Context, p Params, w WorkerParams) error {
	if err := p.validate(); err != nil {
		return err
	}
	stop := make(chan struct{})
	var once sync.Once
	closeStop := func() { once.Do(func() { close(stop) }) }
	defer closeStop()
	if p.Stop != nil {
		go func() {
			select {
			case <-p.Stop:
				closeStop()
			case <-stop:
			}
		}()
	}
	consumers := w.Consumers
	if consumers <= 0 {
		consumers = 4
	}
	eng, err := exec.New(p.Backend, exec.Options{
		Catalog: p.Catalog, Consumers: consumers, BatchSize: w.BatchSize, BatchTimeout: w.BatchTimeout,
		RetryDelay: w.RetryDelay, Owner: p.owner(), Logger: p.Logger, NowFunc: p.NowFunc, Telemetry: p.Telemetry,
	})
	if err != nil {
		return err
	}
	eng.SetStop(stop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = eng.Consume(ctx) // returns when ctx ends and the batches in flight are done
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	p.logger().Info("workers stopping", slog.Duration("grace", w.grace()))
	t := time.NewTimer(w.grace())
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.logger().Warn("grace period over: giving back the items in flight")
		closeStop()
		<-done
	}
	return nil
}

// ServeParams are the inputs of Serve.
type ServeParams struct {
	Params
	// Addr is where to listen (host:port), unless Listener is set.
	Addr     string
	Listener net.Listener
	// AuthConfig says how callers are verified; Serve refuses an address
	// that is not loopback without any (CheckExposure).
	AuthConfig Auth
	// Workers tune the pull consumers; Pull false runs none (a push-only
	// or coordinator-only deployment).
	Workers WorkerParams
	Pull    bool
	// ReadyFunc, optional, is called with the address once listening.
	ReadyFunc func(addr string)
}

// Serve serves the coordinator endpoint, the push endpoint, health and
// readiness, and runs the pull consumers, until ctx ends. It then stops
// gracefully: readiness fails and new work is refused (503) at once, the
// listener closes, requests and batches in flight get the grace period to
// finish, and what is left is given back: claims released, messages
// visible again (pulled) or answered 503 (pushed, so that the push system
// delivers them again).
func Serve(ctx context.Context, p ServeParams) error {
	addr := p.Addr
	if p.Listener != nil {
		addr = p.Listener.Addr().String()
	}
	if err := CheckExposure(addr, p.AuthConfig); err != nil {
		return err
	}
	auth, err := NewAuthenticator(ctx, p.AuthConfig)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	closeStop := func() { stopOnce.Do(func() { close(stop) }) }
	defer closeStop()
	draining := &atomic.Bool{}
	hp := p.Params
	hp.Auth, hp.Stop, hp.Draining = auth, stop, draining
	mux, err := NewMux(hp)
	if err != nil {
		return err
	}
	ln := p.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", p.Addr); err != nil {
			return fmt.Errorf("listen on %s: %w", p.Addr, err)
		}
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log := hp.logger()
	log.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("auth", auth.Kind()),
		slog.String("backend", p.Backend.Name), slog.Bool("pull", p.Pull))
	if p.ReadyFunc != nil {
		p.ReadyFunc(ln.Addr().String())
	}

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var workers sync.WaitGroup
	if p.Pull {
		wp := hp
		wp.Stop = stop
		w := p.Workers
		w.Grace = p.Workers.grace()
		workers.Go(func() { _ = RunWorkers(workCtx, wp, w) })
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		serveErr = fmt.Errorf("serve on %s: %w", ln.Addr(), serveErr)
	}
	grace := p.Workers.grace()
	log.Info("stopping", slog.Duration("grace", grace))
	draining.Store(true)
	stopWork()
	timer := time.AfterFunc(grace, closeStop) // then in-flight pushes and batches give back what is left
	defer timer.Stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+releaseMargin)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("requests still in flight at the end of the grace period", slog.Any("error", err))
	}
	workers.Wait()
	log.Info("stopped")
	return serveErr
}

// releaseMargin is the time after the grace period allowed for giving
// back what was cut short (releases, visibility changes, answers).
const releaseMargin = 5 * time.Second

// NewMux returns the server's routes on p: the coordinator at / and
// /trigger, the push endpoint at /push, /healthz and /readyz. The
// coordinator and the push endpoint share one core (exec.Build): one
// router, one chain starter, one set of caches.
func NewMux(p Params) (*http.ServeMux, error) {
	build := sync.OnceValues(p.build)
	coord, err := newCoordinator(p, build)
	if err != nil {
		return nil, err
	}
	push, err := newPush(p, build)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/{$}", coord)
	mux.Handle("/trigger", coord)
	mux.Handle(PathPush, push)
	mux.Handle(PathHealth, NewHealth())
	mux.Handle(PathReady, NewReady(p))
	return mux, nil
}

// ListenAddr returns addr, or when it is empty ":"+$PORT (as Cloud Run
// and Knative set it; getenv nil: os.Getenv) or ":8080".
func ListenAddr(addr string, getenv func(string) string) string {
	if addr != "" {
		return addr
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if port := getenv("PORT"); port != "" {
		return ":" + port
	}
	return ":8080"
}
