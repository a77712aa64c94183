// Package postgres implements baton's ports (lease, ledger, queue, effect)
// and their optional abilities (lease contention counts, jobs' pause
// flags; the queue's depth, peek, move and visibility changes) on
// PostgreSQL, with github.com/jackc/pgx/v5.
//
// # Semantics
//
// Every write of the lease, ledger, effect and contention stores is one
// conditional statement on one row (INSERT … ON CONFLICT … DO UPDATE …
// WHERE, or UPDATE … WHERE, each RETURNING the row written), run in
// autocommit: the same conditional-write semantics as the DynamoDB and
// SQLite adapters, in one round trip when it applies.
//
// A refused write must report the record that refused it. The lease store
// sends its conditional upsert and a read of the row in one batch (one
// round trip, one implicit transaction): ON CONFLICT DO UPDATE locks the
// conflicting row even when its WHERE refuses the update, so the read that
// follows sees the very record that refused it. The ledger's transitions
// run their statement alone first; a refusal sends, in one batch, a read
// of the row FOR UPDATE and the statement again, so that the record
// returned with the sentinel is the one that refused the write.
//
// The queue is a table of messages. A receive is one statement: it picks
// up to Max visible messages in delivery order with FOR UPDATE SKIP LOCKED
// (concurrent receivers never wait for each other nor get the same
// message), hides them for the visibility timeout under a fresh receipt
// handle and counts the receive, and moves those past the queue's
// dead-letter policy to its dead-letter queue instead. Delete, visibility
// changes and moves are one statement each. A send is one INSERT of the
// batch that also notifies the queue's channel (NOTIFY baton_queue); long
// polls LISTEN on one connection per DB and look again as soon as a
// message is sent to their queue, else every PollInterval.
//
// The schema is embedded and versioned (migrations/NNN_name.sql, recorded
// in baton_schema_migrations); Migrate applies the missing ones under an
// advisory lock, so that concurrent setups apply each migration once.
// Nothing migrates implicitly: `baton setup --backend postgres` does it,
// and the stores report a database that lacks the schema (ErrNoSchema).
//
// Times are stored as BIGINT Unix nanoseconds, compared inside the
// statements with the caller's Now: the database's clock is never read.
//
// # Shared code
//
// This package holds the engine's SQL, every statement explicit, and how
// it runs. The Go around the statements that does not depend on the
// dialect (row decoding, receipt handles, the long poll's schedule, the
// prune loop, the effect and rate limit stores, the pause flag, the
// meaning of a write's outcome) is internal/sqlstore's, shared with the
// other SQL engine: the statements type (db.go) implements its small
// XxxDB interfaces.
//
// # Errors
//
// Every backend error goes through one translation (translate, errors.go):
// a missing table becomes ErrNoSchema, naming the command that creates it;
// a connection that cannot be made or is lost is ErrUnavailable; the
// context's errors are kept.
//
// # Connection losses
//
// A connection refused, lost or cut by a server stopping or starting is
// transient (the one classification: transient, errors.go). Every
// statement retries it with jittered exponential backoff, for the DB's
// retry window (a minute by default; Options.RetryWindow) and within its
// context, so that a server restart or failover costs latency, not
// errors: consumers, coordinators and operator commands ride it out. A
// statement that never reached the server is sent again as it is. One
// whose connection was lost after it was sent may have applied: every
// write here is conditional or idempotent, so its re-run either applies
// again to the same effect or is refused, and an operation whose refusal
// could be its own first run's write tells the two apart by what the
// record holds (retry.go, and each operation's comment). The ports' sentinels are returned for the conditions their
// contracts name, wrapped with the operation and the key.
package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/internal/sqlstore"
)

// DB is a connection pool to a database that holds (or will hold) baton's
// schema, with the listener its queues' long polls share.
type DB struct {
	pool        *pgxpool.Pool
	ownsPool    bool
	retryWindow time.Duration // see SetRetryWindow

	listenOnce sync.Once
	listener   *listener
}

// Options tune Open. The zero value is usable.
type Options struct {
	// MaxConns bounds the pool's connections; 0 keeps pgxpool's default
	// (the larger of 4 and the number of CPUs) or the DSN's pool_max_conns.
	MaxConns int32
	// RetryWindow is how long an operation retries a transient connection
	// error before it fails (SetRetryWindow): 0 means DefaultRetryWindow,
	// a negative window none.
	RetryWindow time.Duration
	// Tracer, optional, is the connections' pgx tracer (the
	// OpenTelemetry one, a round-trip counter).
	Tracer pgx.QueryTracer
}

// New returns a DB on pool, which the caller keeps and closes after the
// DB. Its operations retry transient connection errors for
// DefaultRetryWindow (SetRetryWindow changes it).
func New(pool *pgxpool.Pool) *DB { return &DB{pool: pool, retryWindow: DefaultRetryWindow} }

// Open connects to the database at dsn (a postgres:// URL or a key=value
// string, as pgx reads it) and checks that it answers. Close closes the
// pool.
func Open(ctx context.Context, dsn string, o *Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", errDSN(err))
	}
	if o != nil && o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if o != nil && o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", translate(err))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", describe(cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database), translate(err))
	}
	d := &DB{pool: pool, ownsPool: true}
	if o != nil {
		d.SetRetryWindow(o.RetryWindow)
	} else {
		d.SetRetryWindow(0)
	}
	return d, nil
}

func describe(host string, port uint16, db string) string {
	return fmt.Sprintf("%s:%d/%s", host, port, db)
}

// Pool is the DB's connection pool.
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// Close stops the listener and, when Open made the pool, closes it.
func (d *DB) Close() error {
	if d.listener != nil {
		d.listener.stop()
	}
	if d.ownsPool {
		d.pool.Close()
	}
	return nil
}

// Times are stored as Unix nanoseconds (0 = zero time, sqlstore.Nanos) so
// that comparisons inside conditional statements are exact.
func toNanos(t time.Time) int64 { return sqlstore.Nanos(t) }

func fromNanos(n int64) time.Time { return sqlstore.Time(n) }

// NewEffectStore returns the effect store of db: sqlstore.EffectStore on
// baton_effects.
func NewEffectStore(db *DB) *sqlstore.EffectStore { return &sqlstore.EffectStore{DB: statements{db}} }

// NewRateLimitStore returns the rate limit store of db:
// sqlstore.RateLimitStore on baton_rate_limits (one row per counter)
// and baton_rate_slots (one row per slot).
func NewRateLimitStore(db *DB) *sqlstore.RateLimitStore {
	return &sqlstore.RateLimitStore{DB: statements{db}}
}

// statements is the engine as sqlstore sees it: every sqlstore.XxxDB
// (EffectDB, RateLimitDB, PauseDB, PruneDB), each method one of the
// engine's statements on db, in its dialect.
type statements struct{ db *DB }
