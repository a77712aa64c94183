package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNoSchema: baton's tables are missing (or behind this version):
	// 'baton setup --backend postgres' creates them.
	ErrNoSchema = errors.New("baton's schema is not set up in this database (run 'baton setup --backend postgres')")
	// ErrSchemaTooNew: the database was migrated by a newer baton.
	ErrSchemaTooNew = errors.New("baton's schema is newer than this version")
	// ErrUnavailable: no connection to the server could be made.
	ErrUnavailable = errors.New("postgres unreachable")
)

// PostgreSQL error codes translate reads.
const (
	codeUndefinedTable = "42P01"
	codeInvalidAuth    = "28P01"
	codeInvalidCatalog = "3D000"
)

// translate is the one place where backend errors become the package's:
// a missing table is ErrNoSchema, a failed connection ErrUnavailable; the
// context's errors and everything else are kept, wrapped so that
// errors.As still finds the *pgconn.PgError.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeUndefinedTable:
			return fmt.Errorf("%w: %s", ErrNoSchema, pe.Message)
		case codeInvalidAuth, codeInvalidCatalog:
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// errDSN names a connection string pgx cannot read (pgx quotes it with
// its password masked).
func errDSN(err error) error {
	return fmt.Errorf("want postgres://user:password@host:port/database or key=value pairs: %w", err)
}
