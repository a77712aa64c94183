package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLock is the advisory lock key that serialises migrators (the
// text "baton" as a number).
const migrateLock = 0x6261746f6e

// Migration is one embedded schema change.
type Migration struct {
	Version int    // from the file name: 001_… is version 1
	Name    string // the file name
	SQL     string
}

// Migrations lists the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, path := range names {
		name := strings.TrimPrefix(path, "migrations/")
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: the name must start with its version, as 001_name.sql", name)
		}
		if len(out) > 0 && out[len(out)-1].Version >= v {
			return nil, fmt.Errorf("migration %s: version %d repeats or goes back", name, v)
		}
		body, err := migrations.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	return out, nil
}

// SchemaVersion returns the latest version the embedded migrations reach.
func SchemaVersion() int {
	ms, err := Migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Migrate applies the embedded migrations the database lacks, each in its
// own transaction with its record in baton_schema_migrations, under an
// advisory lock: concurrent calls apply each migration once. It returns
// the versions it applied (none when the schema is current). A database
// whose schema is newer than this version's migrations is refused with an
// error matching ErrSchemaTooNew, and nothing is changed.
func (d *DB) Migrate(ctx context.Context) ([]int, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", translate(err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", translate(err))
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock))
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS baton_schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL)`); err != nil {
		return nil, fmt.Errorf("migrate: %w", translate(err))
	}
	latest, err := appliedVersion(ctx, conn.Conn())
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if known := SchemaVersion(); latest > known {
		return nil, fmt.Errorf("migrate: %w: the database is at version %d, this baton knows up to %d", ErrSchemaTooNew, latest, known)
	}
	var applied []int
	for _, m := range ms {
		if m.Version <= latest {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO baton_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, time.Now().UTC())
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate %s: %w", m.Name, translate(err))
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// Version returns the schema version the database is at: 0 when baton's
// schema was never set up.
func (d *DB) Version(ctx context.Context) (int, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", translate(err))
	}
	defer conn.Release()
	v, err := appliedVersion(ctx, conn.Conn())
	if errors.Is(err, ErrNoSchema) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}

// CheckSchema returns nil when the database's schema is this version's,
// else an error that says what to run: ErrNoSchema when it is missing or
// behind, ErrSchemaTooNew when it is ahead.
func (d *DB) CheckSchema(ctx context.Context) error {
	v, err := d.Version(ctx)
	if err != nil {
		return err
	}
	switch known := SchemaVersion(); {
	case v < known:
		return fmt.Errorf("%w: the database is at schema version %d of %d", ErrNoSchema, v, known)
	case v > known:
		return fmt.Errorf("%w: the database is at version %d, this baton knows up to %d", ErrSchemaTooNew, v, known)
	}
	return nil
}

func appliedVersion(ctx context.Context, conn *pgx.Conn) (int, error) {
	var v int
	err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM baton_schema_migrations`).Scan(&v)
	if err != nil {
		return 0, translate(err)
	}
	return v, nil
}
