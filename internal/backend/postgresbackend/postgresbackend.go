// Package postgresbackend opens baton's PostgreSQL engine: the lease,
// ledger and effect stores and the work queue with its dead-letter queue,
// all in one database (package postgres). It is what `baton
// run|serve|status|… --backend postgres` and batonhttp's "postgres" engine
// stand on.
//
// Setup applies the schema's migrations and creates the two queues with
// the dead-letter policy; Open refuses a database that Setup has not
// brought to this version (ErrNotSetUp), so that nothing is created by a
// command that only meant to read.
package postgresbackend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/postgres"
	"github.com/batonhq/baton/internal/queue"
)

// EnvDSN is the variable the connection string is read from when no
// --dsn is given (postgres://user:password@host:port/database?sslmode=…,
// or pgx's key=value form; PGHOST, PGUSER, PGPASSWORD… fill what it
// leaves out).
const EnvDSN = "BATON_PG_DSN"

// Queue names and the redrive limit Setup stores.
const (
	WorkQueue       = "work"
	DeadLetterQueue = "work-dlq"
	MaxReceives     = 5
	// JobQueuePrefix prefixes the name of a job's own queue
	// (baton.JobQueue): job queue "noisy" is the queue "job-noisy".
	JobQueuePrefix = "job-"
)

// DefaultReceiveWait is an idle consumer's long poll. A send wakes it at
// once (LISTEN/NOTIFY), so the wait costs no latency; it is kept short
// because a consumer that stops lets its receive in flight end first (a
// receive abandoned half-way could take messages nobody handles), and
// two looks a second per idle consumer are cheap.
const DefaultReceiveWait = 500 * time.Millisecond

// DefaultMaxConns is the pool's size when neither Params.MaxConns nor
// the DSN's pool_max_conns sets it: pgxpool's own default (the larger of
// 4 and the CPU count) makes a process's consumers, which work on up to
// ten items a batch each, queue for connections.
const DefaultMaxConns = 16

// DefaultRetryWindow is how long each operation retries a lost or
// refused connection when Params.RetryWindow is 0.
const DefaultRetryWindow = postgres.DefaultRetryWindow

// ErrNotSetUp matches Open's error when the database lacks the schema or
// the queues ('baton setup --backend postgres' makes them).
var ErrNotSetUp = errors.New("not set up (run 'baton setup --backend postgres')")

// Params say which database a backend works on.
type Params struct {
	// DSN is the connection string; required unless Pool is set.
	DSN string
	// Pool, when set, is used instead of connecting to DSN: an open pool
	// the caller configured (a tracer, TLS, …) and closes after the
	// backend. MaxConns is then ignored.
	Pool *pgxpool.Pool
	// MaxConns bounds the connection pool; 0 means the DSN's
	// pool_max_conns, else DefaultMaxConns.
	MaxConns int32
	// ReceiveWait is the long-poll wait of an idle consumer's receives; 0
	// means DefaultReceiveWait.
	ReceiveWait time.Duration
	// RetryWindow is how long each operation retries a lost or refused
	// connection (a server restarting or failing over) before it fails; 0
	// means DefaultRetryWindow (a minute), a negative window none.
	RetryWindow time.Duration
	// TracerProvider records each statement as a span (pgx's tracer hook,
	// through otelpgx), a child of the step that ran it; nil: the global
	// provider. Not used with Pool, whose tracer is the caller's.
	TracerProvider trace.TracerProvider
}

// Open connects to the database, checks that Setup brought it to this
// version's schema and made the queues, and returns the backend on it. Its
// Close closes the pool.
func Open(ctx context.Context, p Params) (backend.Backend, error) {
	if strings.TrimSpace(p.DSN) == "" && p.Pool == nil {
		return backend.Backend{}, fmt.Errorf("postgres backend: no connection string (set %s or --dsn)", EnvDSN)
	}
	if p.ReceiveWait < 0 {
		return backend.Backend{}, fmt.Errorf("postgres backend: negative receive wait %s", p.ReceiveWait)
	}
	if p.ReceiveWait == 0 {
		p.ReceiveWait = DefaultReceiveWait
	}
	var db *postgres.DB
	if p.Pool != nil {
		db, p.DSN = postgres.New(p.Pool), p.Pool.Config().ConnString()
		db.SetRetryWindow(p.RetryWindow)
	} else {
		var err error
		if p.MaxConns == 0 && !strings.Contains(p.DSN, "pool_max_conns") {
			p.MaxConns = DefaultMaxConns
		}
		if db, err = postgres.Open(ctx, p.DSN, &postgres.Options{MaxConns: p.MaxConns, RetryWindow: p.RetryWindow,
			Tracer: otelpgx.NewTracer(otelpgx.WithTracerProvider(tracerOr(p.TracerProvider)), otelpgx.WithDisableConnectionDetailsInAttributes())}); err != nil {
			return backend.Backend{}, fmt.Errorf("postgres backend: %w", err)
		}
	}
	if err := db.CheckSchema(ctx); err != nil {
		db.Close()
		if errors.Is(err, postgres.ErrNoSchema) {
			return backend.Backend{}, fmt.Errorf("postgres backend %s: %w: %w", Redact(p.DSN), ErrNotSetUp, err)
		}
		return backend.Backend{}, fmt.Errorf("postgres backend %s: %w", Redact(p.DSN), err)
	}
	opts := &postgres.QueueOptions{NoCreate: true}
	work, err := postgres.OpenQueue(ctx, db, WorkQueue, opts)
	if err == nil {
		_, err = postgres.OpenQueue(ctx, db, DeadLetterQueue, opts)
	}
	if err != nil {
		db.Close()
		if errors.Is(err, queue.ErrNotFound) {
			err = fmt.Errorf("%w: %w", ErrNotSetUp, err)
		}
		return backend.Backend{}, fmt.Errorf("postgres backend %s: %w", Redact(p.DSN), err)
	}
	dlq, maxReceives, err := work.DeadLetterPolicy(ctx)
	if err != nil {
		db.Close()
		return backend.Backend{}, fmt.Errorf("postgres backend: %w", err)
	}
	led := postgres.NewLedgerStore(db)
	b := backend.Backend{
		// A job's own queue is created on first use, with the work
		// queue's dead-letter queue and redrive limit (the upsert of its
		// row is idempotent, so every process may open it).
		JobQueueFunc: func(ctx context.Context, name string) (backend.Queue, error) {
			if dlq == "" {
				return postgres.OpenQueue(ctx, db, JobQueuePrefix+name, nil)
			}
			return postgres.OpenQueue(ctx, db, JobQueuePrefix+name, &postgres.QueueOptions{DeadLetterQueue: dlq, MaxReceives: maxReceives})
		},
		Name:        "postgres",
		CheapProbes: true,
		Leases:      postgres.NewLeaseStore(db),
		Locks:       postgres.NewLockStore(db),
		Ledger:      led,
		Pruner:      led,
		Effects:     postgres.NewEffectStore(db),
		RateLimits:  postgres.NewRateLimitStore(db),
		Retention:   "finished runs, their items (results included), settle marks and item pages are pruned past each job's Retention by the runtime (baton run), a bounded pass every few minutes",
		Work:        work,
		MaxReceives: maxReceives,
		ReceiveWait: p.ReceiveWait,
		CloseFunc:   db.Close,
	}
	if dlq != "" {
		if b.DeadLetter, err = postgres.OpenQueue(ctx, db, dlq, opts); err != nil {
			db.Close()
			return backend.Backend{}, fmt.Errorf("postgres backend: %w", err)
		}
	}
	return b, nil
}

// SetupResult says what Setup did.
type SetupResult struct {
	Applied     []int // migration versions applied now (none: the schema was current)
	Version     int   // the schema version the database is at
	MaxReceives int
}

// Setup applies the migrations the database lacks and creates the work
// queue and its dead-letter queue with the redrive limit (0 means
// MaxReceives). It is idempotent and safe to run concurrently.
func Setup(ctx context.Context, dsn string, maxReceives int) (SetupResult, error) {
	if strings.TrimSpace(dsn) == "" {
		return SetupResult{}, fmt.Errorf("setup: no connection string (set %s or --dsn)", EnvDSN)
	}
	if maxReceives < 0 {
		return SetupResult{}, fmt.Errorf("setup: negative max receives %d", maxReceives)
	}
	if maxReceives == 0 {
		maxReceives = MaxReceives
	}
	db, err := postgres.Open(ctx, dsn, &postgres.Options{MaxConns: 2})
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup %s: %w", Redact(dsn), err)
	}
	if _, err := postgres.OpenQueue(ctx, db, WorkQueue, &postgres.QueueOptions{DeadLetterQueue: DeadLetterQueue, MaxReceives: maxReceives}); err != nil {
		return SetupResult{}, fmt.Errorf("setup %s: %w", Redact(dsn), err)
	}
	return SetupResult{Applied: applied, Version: postgres.SchemaVersion(), MaxReceives: maxReceives}, nil
}

// Redact returns dsn for messages: host, port and database of a URL, its
// password masked; a key=value string is summarised as such.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "(key=value connection string)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	u.RawQuery = ""
	return u.String()
}

// tracerOr is tp, or the global provider when tp is nil.
func tracerOr(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return otel.GetTracerProvider()
	}
	return tp
}
