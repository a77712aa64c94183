package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNoSchema: baton's tables are missing (or behind this version):
	// 'baton setup --backend postgres' creates them.
	ErrNoSchema = errors.New("baton's schema is not set up in this database (run 'baton setup --backend postgres')")
	// ErrSchemaTooNew: the database was migrated by a newer baton.
	ErrSchemaTooNew = errors.New("baton's schema is newer than this version")
	// ErrUnavailable: no connection to the server could be made, or the
	// one in use was lost (the server restarting, failing over or briefly
	// unreachable) for longer than the operation's retries.
	ErrUnavailable = errors.New("postgres unreachable")
)

// PostgreSQL error codes translate and transient read.
const (
	codeUndefinedTable   = "42P01"
	codeInvalidAuth      = "28P01"
	codeInvalidCatalog   = "3D000"
	codeAdminShutdown    = "57P01" // the server is shutting down (fast or immediate stop)
	codeCrashShutdown    = "57P02" // another server process crashed
	codeCannotConnectNow = "57P03" // starting up, recovering or shutting down
	classConnection      = "08"    // connection_exception and its subclasses
)

// transient is the one classification of connection errors: it says
// whether err is a connection refused, lost or cut by a server stopping
// or starting (which a later attempt may not meet: a restart, a failover,
// a network blip), and if so whether the statement may have reached the
// server — its outcome is then unknown: it may have applied, and its
// answer been lost with the connection.
//
// A connection that could not be made, or was known closed before use,
// sent nothing. An error the server answered a statement with (a
// constraint, a missing table, a bad password) is not transient: the
// same attempt meets it again. The context's errors are not transient.
func transient(err error) (ok, sent bool) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, false
	}
	var ce *pgconn.ConnectError
	connecting := errors.As(err, &ce)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == codeAdminShutdown, pe.Code == codeCrashShutdown, pe.Code == codeCannotConnectNow,
			strings.HasPrefix(pe.Code, classConnection):
			return true, !connecting
		}
		return false, false
	}
	switch {
	case connecting, errors.Is(err, pgconn.ErrConnClosed):
		return true, false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true, !pgconn.SafeToRetry(err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true, !pgconn.SafeToRetry(err)
	}
	return false, false
}

// translate is the one place where backend errors become the package's:
// a missing table is ErrNoSchema, a failed or lost connection (transient)
// and a refused login ErrUnavailable; the context's errors and everything
// else are kept, wrapped so that errors.As still finds the
// *pgconn.PgError.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ok, _ := transient(err); ok {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
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
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// errDSN names a connection string pgx cannot read (pgx quotes it with
// its password masked).
func errDSN(err error) error {
	return fmt.Errorf("want postgres://user:password@host:port/database or key=value pairs: %w", err)
}

// found turns a one-row read's error into sqlstore.ReadFunc's result:
// false, with no error, when there was no row; other errors translated.
func found(err error) (bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, translate(err)
}
