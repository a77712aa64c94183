package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultRetryWindow is how long an operation retries a transient
// connection error (see transient) before it reports ErrUnavailable: long
// enough for a server restart or a managed database's failover.
const DefaultRetryWindow = time.Minute

// The backoff between retries: jittered, doubling from retryFirst up to
// retryCap, so that a server back up is seen within retryCap and a
// process's connections do not all come back at the same instant.
const (
	retryFirst = 50 * time.Millisecond
	retryCap   = 2 * time.Second
)

// SetRetryWindow sets how long operations retry transient connection
// errors: 0 means DefaultRetryWindow, a negative window none. Call it
// before the DB is used.
func (d *DB) SetRetryWindow(w time.Duration) {
	if w == 0 {
		w = DefaultRetryWindow
	}
	d.retryWindow = w
}

// attempts is what the statements of one operation share across their
// retries.
//
// Every statement is retried after a transient error, within the DB's
// retry window and the context. One that never reached the server (no
// connection, or a connection known closed before use) cannot have
// applied. One whose connection was lost after it was sent may have
// applied, its answer lost: sending it again is safe only because every
// write of this package is conditional or idempotent, and the operations
// whose second run would answer differently from the first read unsure
// to tell their own write from another's (see each). An operation that
// cannot tell sets sendOnce: a statement whose outcome is unknown is then
// reported, not sent again.
type attempts struct {
	// unsure: a statement of the operation was sent again after an
	// attempt whose outcome is unknown, so a refusal may be the
	// operation's own earlier write.
	unsure bool
	// sendOnce: never send a statement again once it may have reached
	// the server.
	sendOnce bool
}

// retry runs fn until it returns nil or an error that is not transient,
// ctx ends, or the retry window has passed since its first transient
// error; it then returns fn's last error. fn runs one attempt of
// statements and must start over each time (fresh results). a may be nil
// (a read, or a write whose re-run is harmless as it is).
func (d *DB) retry(ctx context.Context, a *attempts, fn func() error) error {
	var began time.Time
	backoff := retryFirst
	for {
		err := fn()
		ok, sent := transient(err)
		if !ok || d.retryWindow < 0 {
			return err
		}
		if sent && a != nil && a.sendOnce {
			return fmt.Errorf("%w (not sent again: it may have applied)", err)
		}
		// The retry budget is the process's own elapsed time, not a
		// record's expiry: the wall clock is the right one.
		if began.IsZero() {
			began = time.Now()
		}
		left := d.retryWindow - time.Since(began)
		if left <= 0 {
			return fmt.Errorf("%w (retried for %s)", err, d.retryWindow)
		}
		wait := min(backoff/2+rand.N(backoff/2+1), left)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retrying: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(2*backoff, retryCap)
		if sent && a != nil {
			a.unsure = true
		}
	}
}

// retriedRow is a pgx.Row whose Scan runs the query, retried.
type retriedRow struct {
	d    *DB
	ctx  context.Context
	a    *attempts
	sql  string
	args []any
}

func (r retriedRow) Scan(dest ...any) error {
	return r.d.retry(r.ctx, r.a, func() error { return r.d.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...) })
}

// queryRow is pool.QueryRow, retried (at Scan).
func (d *DB) queryRow(ctx context.Context, a *attempts, sql string, args ...any) pgx.Row {
	return retriedRow{d: d, ctx: ctx, a: a, sql: sql, args: args}
}

// exec is pool.Exec, retried.
func (d *DB) exec(ctx context.Context, a *attempts, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := d.retry(ctx, a, func() error {
		var err error
		tag, err = d.pool.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// batch sends the batch that build makes and reads its results with read,
// retried: each attempt builds a fresh batch.
func (d *DB) batch(ctx context.Context, a *attempts, build func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	return d.retry(ctx, a, func() error {
		b := &pgx.Batch{}
		build(b)
		br := d.pool.SendBatch(ctx, b)
		if err := read(br); err != nil {
			_ = br.Close()
			return err
		}
		return br.Close()
	})
}

// queryAll runs a query and scans every row with scan, retried: an
// attempt that fails part-way starts over.
func queryAll[T any](ctx context.Context, d *DB, sql string, args []any, scan func(pgx.Rows) (T, error)) ([]T, error) {
	var out []T
	err := d.retry(ctx, nil, func() error {
		out = nil
		rows, err := d.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	return out, err
}
