package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/queue"
)

// RawPostgresDDL creates the tables of the raw references on PostgreSQL:
// raw_leases, of the lease table's shape, and raw_jobs, a bare queue.
const RawPostgresDDL = `
CREATE TABLE IF NOT EXISTS raw_leases (
    job         TEXT   PRIMARY KEY,
    owner       TEXT   NOT NULL DEFAULT '',
    fence       BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL DEFAULT 0,
    acquired_at BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS raw_jobs (
    id   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body BYTEA  NOT NULL
)`

// RawPostgresUpsert is the conditional write a lease acquisition makes,
// on raw_leases, with none of the store's code around it: a bare INSERT …
// ON CONFLICT … WHERE.
const RawPostgresUpsert = `
INSERT INTO raw_leases AS l (job, owner, fence, expires_at, acquired_at)
VALUES ($1, $2, 1, $3, $4)
ON CONFLICT (job) DO UPDATE SET
    owner = excluded.owner, fence = l.fence + 1,
    expires_at = excluded.expires_at, acquired_at = excluded.acquired_at
WHERE l.owner = '' OR l.owner = excluded.owner OR l.expires_at <= $5`

// RawPostgresDequeue takes up to $1 jobs off raw_jobs, skipping those
// another worker holds: a bare SKIP LOCKED dequeue (take and finish in one
// statement).
const RawPostgresDequeue = `DELETE FROM raw_jobs WHERE id IN (
    SELECT id FROM raw_jobs ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING id`

// NewDatabaseFunc makes a fresh, empty database named after name and
// returns its connection string.
type NewDatabaseFunc func(ctx context.Context, name string) (string, error)

// PostgresTarget opens each Env on a fresh database made by newDB, set up
// as 'baton setup --backend postgres' sets it up. Its Envs count round
// trips (RoundTrips) besides port calls, and the target runs scenario 7
// (River).
func PostgresTarget(name string, newDB NewDatabaseFunc) Target {
	return Target{Name: name, River: true, OpenFunc: func(ctx context.Context, name string) (*Env, error) {
		dsn, err := newDB(ctx, name)
		if err != nil {
			return nil, err
		}
		return openPostgres(ctx, dsn)
	}}
}

// poolConns bounds each pool: more than any scenario's concurrency.
const poolConns = 96

// RoundTrips counts the statements, batches, prepares and copies sent on
// the connections of a pool: each is one round trip to the server.
type RoundTrips struct{ n atomic.Int64 }

// Load returns the count so far.
func (r *RoundTrips) Load() int64 { return r.n.Load() }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
func (r *RoundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *RoundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// NewCountedPool opens a pool on dsn whose round trips rt counts.
func NewCountedPool(ctx context.Context, dsn string, rt *RoundTrips) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = poolConns
	cfg.ConnConfig.Tracer = rt
	return pgxpool.NewWithConfig(ctx, cfg)
}

func openPostgres(ctx context.Context, dsn string) (env *Env, err error) {
	if _, err := postgresbackend.Setup(ctx, dsn, 5); err != nil {
		return nil, err
	}
	rt := &RoundTrips{}
	pool, err := NewCountedPool(ctx, dsn, rt)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			pool.Close()
		}
	}()
	plain, err := postgresbackend.Open(ctx, postgresbackend.Params{Pool: pool})
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, RawPostgresDDL); err != nil {
		return nil, fmt.Errorf("create raw tables: %w", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO baton_queues (name, created_at) VALUES ($1, 0) ON CONFLICT DO NOTHING`, rawQueue); err != nil {
		return nil, fmt.Errorf("create raw queue: %w", err)
	}
	counted, tally := countedBackend(plain)
	return &Env{
		Backend: counted,
		Calls:   tally,
		Plain:   plain,
		RawWriteFunc: func(ctx context.Context, key string) error {
			now := time.Now().UnixNano()
			tag, err := pool.Exec(ctx, RawPostgresUpsert, key, "raw", now+int64(time.Minute), now, now)
			if err != nil {
				return fmt.Errorf("raw upsert: %w", err)
			}
			if tag.RowsAffected() != 1 {
				return fmt.Errorf("raw upsert of %s: %d rows", key, tag.RowsAffected())
			}
			return nil
		},
		RawSendFunc: func(ctx context.Context, msgs []queue.Message) error {
			bodies := make([][]byte, len(msgs))
			for i, m := range msgs {
				bodies[i] = m.Body
			}
			_, err := pool.Exec(ctx, `INSERT INTO baton_messages (queue, body, sent_at) SELECT $1, b, $2 FROM unnest($3::bytea[]) AS b`,
				rawQueue, time.Now().UnixNano(), bodies)
			return err
		},
		Info:       fmt.Sprintf("one database per scenario, pgxpool of %d connections", poolConns),
		DSN:        dsn,
		Pool:       pool,
		RoundTrips: rt,
		CloseFunc: func() error {
			err := plain.Close()
			pool.Close()
			return err
		},
	}, nil
}

// rawDequeueRate fills raw_jobs with n jobs, then takes them off with
// workers workers, batch at a time, and returns jobs per second.
func rawDequeueRate(ctx context.Context, pool *pgxpool.Pool, n, workers, batch int) (float64, error) {
	if _, err := pool.Exec(ctx, `INSERT INTO raw_jobs (body) SELECT convert_to('job ' || g, 'UTF8') FROM generate_series(1, $1) g`, n); err != nil {
		return 0, fmt.Errorf("fill raw_jobs: %w", err)
	}
	var taken atomic.Int64
	start := time.Now()
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				tag, err := pool.Exec(ctx, RawPostgresDequeue, batch)
				if err != nil {
					errs <- err
					return
				}
				if tag.RowsAffected() == 0 {
					errs <- nil
					return
				}
				taken.Add(tag.RowsAffected())
			}
		}()
	}
	var err error
	for range workers {
		err = errors.Join(err, <-errs)
	}
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("raw dequeue: %w", err)
	}
	if got := taken.Load(); got != int64(n) {
		return 0, fmt.Errorf("raw dequeue took %d of %d jobs", got, n)
	}
	return float64(n) / elapsed.Seconds(), nil
}

var _ interface {
	pgx.QueryTracer
	pgx.BatchTracer
	pgx.PrepareTracer
	pgx.CopyFromTracer
} = (*RoundTrips)(nil)
