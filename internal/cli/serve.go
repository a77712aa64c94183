package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/queue"
)

const serveSynopsis = `serve [--addr A] [--auth-…] [flags]

Serves the catalog over HTTP for container platforms (Cloud Run, Knative,
Kubernetes) and runs the pull consumers on the backend's work queue:

  POST /, /trigger  the coordinator: a CloudEvent tick (binary or structured
                    mode, such as a Knative PingSource's) or a plain JSON
                    trigger ({"job"} or {"job","scheduledTime"}, as a Cloud
                    Scheduler HTTP job sends it)
  POST /push        one work message pushed as a CloudEvent
  GET /healthz      liveness;  GET /readyz  the backend answers

Callers of the POST endpoints are verified by an OIDC token
(--auth-oidc-issuer, --auth-oidc-audience, and --auth-oidc-email for the
accepted service accounts) or a shared secret ($BATON_AUTH_SECRET, sent as
"Authorization: Bearer <secret>" or in --auth-secret-header). With neither,
only loopback callers are served, and an address that is not loopback is
refused unless --auth-none says the platform verifies callers itself.

On SIGTERM it stops taking work, lets work in flight finish for --grace,
then gives back what is left (claims released, messages visible again).`

// Variables serve's flags default to.
const (
	envAuthOIDCIssuer   = "BATON_AUTH_OIDC_ISSUER"
	envAuthOIDCAudience = "BATON_AUTH_OIDC_AUDIENCE"
	envAuthOIDCJWKSURL  = "BATON_AUTH_OIDC_JWKS_URL"
	envAuthOIDCEmails   = "BATON_AUTH_OIDC_EMAILS"
	envAuthSecret       = "BATON_AUTH_SECRET"
	envAuthSecretHeader = "BATON_AUTH_SECRET_HEADER"
)

type serveFlags struct {
	common       *backendFlags
	addr         string
	auth         httpapp.Auth
	emails       string
	consumers    int
	batchSize    int
	batchTimeout time.Duration
	timeout      time.Duration
	grace        time.Duration
	triggerSkew  time.Duration
	triggerAge   triggerAgeFlag
	pull         bool
	logLevel     string
}

// maxBatchSize is the largest --batch-size of any backend (PostgreSQL's;
// the others take queue.MaxBatch).
const maxBatchSize = 100

func (f *serveFlags) register(fs *pflag.FlagSet) {
	defAddr := "127.0.0.1:8080"
	if port := os.Getenv("PORT"); port != "" {
		defAddr = ":" + port
	}
	fs.StringVar(&f.addr, "addr", defAddr, "address to listen on; :$PORT when PORT is set (Cloud Run, Knative)")
	fs.StringVar(&f.auth.OIDCIssuer, "auth-oidc-issuer", os.Getenv(envAuthOIDCIssuer), "OIDC issuer of callers' tokens, such as https://accounts.google.com ($"+envAuthOIDCIssuer+")")
	fs.StringVar(&f.auth.OIDCAudience, "auth-oidc-audience", os.Getenv(envAuthOIDCAudience), "audience callers' tokens must carry: the service's URL ($"+envAuthOIDCAudience+")")
	fs.StringVar(&f.auth.OIDCJWKSURL, "auth-oidc-jwks-url", os.Getenv(envAuthOIDCJWKSURL), "the issuer's signing keys (default: discovered from the issuer) ($"+envAuthOIDCJWKSURL+")")
	fs.StringVar(&f.emails, "auth-oidc-email", os.Getenv(envAuthOIDCEmails), "comma-separated caller emails accepted, such as the scheduler's service account ($"+envAuthOIDCEmails+")")
	// The secret's variable is read after parsing, so that --help never
	// prints it as the flag's default.
	fs.StringVar(&f.auth.Secret, "auth-secret", "", "shared secret callers send (prefer $"+envAuthSecret+": a flag shows in the process list)")
	fs.StringVar(&f.auth.SecretHeader, "auth-secret-header", os.Getenv(envAuthSecretHeader), "header carrying the shared secret (default: Authorization: Bearer) ($"+envAuthSecretHeader+")")
	fs.BoolVar(&f.auth.None, "auth-none", false, "verify no caller: the platform does (Cloud Run without unauthenticated access)")
	fs.IntVar(&f.consumers, "consumers", 4, "pull consumers: batches processed at once")
	fs.IntVar(&f.batchSize, "batch-size", 10, "most messages per pulled batch: up to 10, or 100 on PostgreSQL (claimed and completed a statement per batch)")
	fs.DurationVar(&f.batchTimeout, "batch-timeout", 30*time.Second, "deadline of each pulled batch")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "deadline of each request's work (a fan-out, a pushed message)")
	fs.DurationVar(&f.grace, "grace", httpapp.DefaultGrace, "on SIGTERM, how long work in flight may finish before it is given back")
	fs.DurationVar(&f.triggerSkew, "trigger-skew", httpapp.DefaultTriggerSkew, "how far in the future a trigger's time may be (the sender's clock skew)")
	f.triggerAge.register(fs)
	fs.BoolVar(&f.pull, "pull", true, "run the pull consumers (--pull=false: coordinator and push only)")
	fs.StringVar(&f.logLevel, "log", "info", "log level on stderr: debug, info, warn, error")
}

// serveReport is what serve prints when it starts and stops.
type serveReport struct {
	Event     string `json:"event"` // serving or stopped
	Addr      string `json:"addr"`
	Backend   string `json:"backend"`
	Store     string `json:"store"`
	Auth      string `json:"auth"`
	Pull      bool   `json:"pull"`
	Consumers int    `json:"consumers,omitempty"`
	Jobs      string `json:"jobs"`
}

func serveCommand() command {
	return command{synopsis: serveSynopsis, summary: "serve the coordinator over HTTP (CloudEvents, JSON) and run the pull consumers",
		example: "  baton serve\n  BATON_AUTH_SECRET=… baton serve --addr :8080 --backend aws --json",
		backend: true, streams: true, defineFunc: defineServe}
}

func defineServe(e *env, fs *pflag.FlagSet) runFunc {
	f := serveFlags{common: &e.backend}
	f.register(fs)
	return func(ctx context.Context, _ []string) error { return serve(ctx, e, &f) }
}

func serve(ctx context.Context, e *env, f *serveFlags) error {
	if f.auth.Secret == "" {
		f.auth.Secret = os.Getenv(envAuthSecret)
	}
	for _, em := range strings.Split(f.emails, ",") {
		if em = strings.TrimSpace(em); em != "" {
			f.auth.OIDCEmails = append(f.auth.OIDCEmails, em)
		}
	}
	switch {
	case f.consumers < 1:
		return usagef("--consumers must be at least 1, got %d", f.consumers)
	case f.batchSize < 1 || f.batchSize > maxBatchSize:
		return usagef("--batch-size must be within 1..%d, got %d", maxBatchSize, f.batchSize)
	case f.grace <= 0 || f.timeout <= 0 || f.batchTimeout <= 0:
		return usagef("--grace, --timeout and --batch-timeout must be positive")
	case f.triggerSkew <= 0:
		return usagef("--trigger-skew must be positive")
	}
	triggerAge, err := f.triggerAge.value()
	if err != nil {
		return err
	}
	if err := httpapp.CheckAuth(f.auth); err != nil {
		return usageError{err}
	}
	if err := httpapp.CheckExposure(f.addr, f.auth); err != nil {
		return usagef("--addr %s is not loopback: verify callers with --auth-oidc-issuer and --auth-oidc-audience (Cloud Scheduler, Pub/Sub push), or a shared secret in $%s, or pass --auth-none when the platform verifies them itself", f.addr, envAuthSecret)
	}
	logger, err := e.newLogger(f.logLevel)
	if err != nil {
		return err
	}
	b, err := f.common.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if most := queue.BatchLimit(b.Work); f.pull && f.batchSize > most {
		return usagef("--batch-size %d: the %s backend takes at most %d messages per batch", f.batchSize, b.Name, most)
	}
	report := serveReport{Backend: b.Name, Store: f.common.where(), Auth: f.auth.Kind(), Pull: f.pull, Jobs: strings.Join(e.catalog.Names(), ",")}
	if f.pull {
		report.Consumers = f.consumers
	}
	if b.Pruner != nil {
		// Finished runs past each job's retention, pruned in bounded passes
		// while the server runs.
		pruner, err := exec.New(b, exec.Options{Catalog: e.catalog, Owner: owner() + "/prune", Logger: logger})
		if err != nil {
			return err
		}
		pctx, stopPruning := context.WithCancel(ctx)
		defer stopPruning()
		go pruner.Prune(pctx, 0)
	}
	err = httpapp.Serve(ctx, httpapp.ServeParams{
		Params: httpapp.Params{
			Catalog: e.catalog, Backend: b, Timeout: f.timeout, Logger: logger, Owner: owner(),
			TriggerSkew: f.triggerSkew, TriggerAge: triggerAge, Telemetry: e.telemetry(b.Name, nil),
		},
		Addr: f.addr, AuthConfig: f.auth, Pull: f.pull,
		Workers: httpapp.WorkerParams{Consumers: f.consumers, BatchSize: f.batchSize, BatchTimeout: f.batchTimeout, Grace: f.grace},
		ReadyFunc: func(addr string) {
			report.Event, report.Addr = "serving", addr
			printServe(e.stdout, e.json, report)
		},
	})
	if errors.Is(err, httpapp.ErrNoAuth) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	report.Event = "stopped"
	printServe(e.stdout, e.json, report)
	return nil
}

func printServe(w io.Writer, asJSON bool, r serveReport) {
	if asJSON {
		_ = json.NewEncoder(w).Encode(r)
		return
	}
	if r.Event == "stopped" {
		fmt.Fprintf(w, "stopped serving on %s\n", r.Addr)
		return
	}
	pull := "no pull consumers"
	if r.Pull {
		pull = fmt.Sprintf("%d pull consumers", r.Consumers)
	}
	fmt.Fprintf(w, "serving jobs %s on http://%s (backend %s, %s; callers: %s; %s)\n", r.Jobs, r.Addr, r.Backend, r.Store, r.Auth, pull)
}

// owner names this process in leases and claims.
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}
