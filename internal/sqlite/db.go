// Package sqlite implements baton's ports (lease, ledger, queue, effect) on
// an embedded SQLite file, with modernc.org/sqlite (pure Go, no cgo).
//
// # Semantics
//
// The database runs in WAL mode with a busy timeout, so several processes
// may share one file (baton run and baton status at once). Every write of
// the lease, ledger, effect and contention stores is one conditional
// statement, or one all-or-nothing sequence, on one record, which gives the
// same conditional-write semantics as the DynamoDB adapter. Queue writes
// touch many rows, as SQS calls touch many messages: a batch send inserts
// up to 10 messages in one statement; a receive hides up to 10 messages,
// and moves those past their receive limit to the dead-letter queue, in one
// all-or-nothing write; a move (redrive) updates every message it moves in
// one statement; a delete is one statement on up to 10 messages, a
// visibility change one statement on one message. The writes of one
// process run one after the other on one goroutine, and those queued at
// the same time commit together (see writer.go): each takes effect before
// its call returns, and a failed commit fails them all. The schema is
// embedded and migrated on Open.
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
// # Tracing
//
// Every statement run under a recording OpenTelemetry span is a span of
// its own, a child of it, named and attributed as pgx's tracer names
// PostgreSQL's (Options.TracerProvider; see trace.go); under a span that
// does not record, a statement costs one check and no allocation.
//
// # Errors
//
// Backend errors are returned wrapped; the ports' sentinels are returned
// for the conditions their contracts name.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	sqlite3 "modernc.org/sqlite"

	"github.com/batonhq/baton/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is an open baton database file.
type DB struct {
	sql      *sql.DB
	path     string
	readOnly bool
	writer   *writer // runs the process's writes (see writer.go)
}

// maxConns bounds the connections of one DB: the writer's and the readers'.
const maxConns = 8

// Options tune Open. The zero value is usable.
type Options struct {
	// BusyTimeout is how long a statement waits for another writer; 0 means 10s.
	BusyTimeout time.Duration
	// ReadOnly opens an existing store for reading: nothing is created or
	// migrated, every write fails, and a missing store is an error
	// matching ErrNoStore.
	ReadOnly bool
	// TracerProvider records each statement run under a recording span as
	// a child span of it (see trace.go); nil: the global provider.
	TracerProvider trace.TracerProvider
}

// ErrNoStore matches Open's error for a read-only open of a path where no
// store exists.
var ErrNoStore = errors.New("no store")

// ErrCorrupt matches Open's error for a file that is not a store or fails
// SQLite's integrity check.
var ErrCorrupt = errors.New("corrupt store")

// Open opens (creating if needed) the database at path and migrates it.
func Open(ctx context.Context, path string, o *Options) (*DB, error) {
	busy := 10 * time.Second
	readOnly := false
	var tp trace.TracerProvider
	if o != nil {
		tp = o.TracerProvider
		if o.BusyTimeout > 0 {
			busy = o.BusyTimeout
		}
		readOnly = o.ReadOnly
	}
	if readOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open %s: %w: %v (nothing was created; a command that writes, such as 'baton run', creates it)", path, ErrNoStore, err)
		}
	} else if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Set("_txlock", "immediate")
	}
	q.Add("_pragma", "foreign_keys(ON)")
	base, err := sqlite3.NewConnector("file:" + escapePath(path) + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := sql.OpenDB(newTracedConnector(base, tp))
	// Keep every connection open: database/sql keeps two idle by default,
	// and a connection closed and opened again reads the schema and
	// prepares its statements anew.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	d := &DB{sql: db, path: path, readOnly: readOnly}
	if err := d.check(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if readOnly {
		err = d.migrated(ctx)
	} else {
		err = d.migrate(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	d.writer = startWriter(db)
	return d, nil
}

// escapePath escapes what a SQLite URI's path may not hold as itself: a
// path with '#', '?' or '%' would otherwise open another file.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// check runs SQLite's quick integrity check: a file that is not a
// database, or whose pages are damaged, is refused at open rather than
// at the first query that reads the damage.
func (d *DB) check(ctx context.Context) error {
	rows, err := d.sql.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if line != "ok" && len(problems) < 5 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// migrated checks, for a read-only open, that the store has every
// migration this version knows.
func (d *DB) migrated(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	var applied int
	err = d.sql.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&applied)
	if err != nil {
		return fmt.Errorf("%w: not a baton store (%v)", ErrCorrupt, err)
	}
	if applied < len(names) {
		return fmt.Errorf("the store has %d of this version's %d migrations: run a command that writes (such as 'baton run') to migrate it", applied, len(names))
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error {
	d.writer.stop()
	return d.sql.Close()
}

// Path is the file the database lives in.
func (d *DB) Path() string { return d.path }

// SQL exposes the underlying handle for tests and diagnostics.
func (d *DB) SQL() *sql.DB { return d.sql }

func (d *DB) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	tx, err := d.sql.BeginTx(ctx, nil) // IMMEDIATE: one migrator at a time
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, name := range names {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, name, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return tx.Commit()
}

// Times are stored as Unix nanoseconds (0 = zero time, sqlstore.Nanos) so
// that comparisons inside conditional statements are exact.
func toNanos(t time.Time) int64 { return sqlstore.Nanos(t) }

func fromNanos(n int64) time.Time { return sqlstore.Time(n) }

// found turns a one-row read's error into sqlstore.ReadFunc's result:
// false, with no error, when there was no row.
func found(err error) (bool, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// NewEffectStore returns the effect store of db: sqlstore.EffectStore on
// the effects table.
func NewEffectStore(db *DB) *sqlstore.EffectStore { return &sqlstore.EffectStore{DB: statements{db}} }

// NewRateLimitStore returns the rate limit store of db:
// sqlstore.RateLimitStore on the rate_limits (one row per counter) and
// rate_slots (one row per slot) tables.
func NewRateLimitStore(db *DB) *sqlstore.RateLimitStore {
	return &sqlstore.RateLimitStore{DB: statements{db}}
}

// statements is the engine as sqlstore sees it: every sqlstore.XxxDB
// (EffectDB, RateLimitDB, PauseDB, PruneDB), each method one of the
// engine's statements on db, in its dialect.
type statements struct{ db *DB }
