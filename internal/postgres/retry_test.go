package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/pgtest"
)

// The one classification: connection errors are transient, with whether
// the statement may have reached the server; what the server answered
// (a constraint, a bad password, a missing table) is not, nor the
// context's end.
func TestTransient(t *testing.T) {
	t.Parallel()
	_, refused := pgx.Connect(t.Context(), "postgres://x@127.0.0.1:1/x?connect_timeout=5")
	require.Error(t, refused)
	for _, tc := range []struct {
		name     string
		err      error
		ok, sent bool
	}{
		{"connection refused", refused, true, false},
		{"admin shutdown", &pgconn.PgError{Code: codeAdminShutdown}, true, true},
		{"crash shutdown", &pgconn.PgError{Code: codeCrashShutdown}, true, true},
		{"starting up", &pgconn.PgError{Code: codeCannotConnectNow}, true, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true, true},
		{"lost mid-statement", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true, true},
		{"closed before use", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false, false},
		{"bad password", &pgconn.PgError{Code: codeInvalidAuth}, false, false},
		{"missing table", &pgconn.PgError{Code: codeUndefinedTable}, false, false},
		{"cancelled", fmt.Errorf("%w: %w", context.Canceled, io.ErrUnexpectedEOF), false, false},
		{"no rows", pgx.ErrNoRows, false, false},
		{"nil", nil, false, false},
	} {
		ok, sent := transient(tc.err)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.sent, sent, tc.name)
		if tc.ok {
			require.ErrorIs(t, translate(tc.err), ErrUnavailable, tc.name)
		}
	}
}

// cutter is a TCP proxy to the test server that, when armed, drops the
// next answer the server sends and cuts that connection: the statement
// ran (and, in autocommit, committed), its answer is lost, as when a
// server dies between its commit and its reply.
type cutter struct {
	ln    net.Listener
	to    string
	armed atomic.Bool
	cuts  atomic.Int32
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, dsn string) (*cutter, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &cutter{ln: ln, to: u.Host}
	c.wg.Go(c.serve)
	t.Cleanup(func() { ln.Close(); c.wg.Wait() })
	u.Host = ln.Addr().String()
	return c, u.String()
}

func (c *cutter) serve() {
	for {
		client, err := c.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", c.to)
		if err != nil {
			client.Close()
			continue
		}
		c.wg.Go(func() { _, _ = io.Copy(server, client); server.Close() })
		c.wg.Go(func() {
			defer client.Close()
			defer server.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && c.armed.CompareAndSwap(true, false) {
					c.cuts.Add(1)
					return // the answer is lost with the connection
				}
				if n > 0 {
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

// A write whose answer is lost after it committed is sent again, and the
// re-run, refused by the record the first run wrote, reports the first
// run's success, not a conflict: a claim is the claimer's, a completion
// completes, a settle mark is written once. Without telling its own write
// from another's, the claim would be "held" by its own owner and the
// completion "terminal".
func TestAnswerLostAfterCommit(t *testing.T) {
	t.Parallel()
	cut, dsn := newCutter(t, pgtest.DSN(t))
	db, err := Open(t.Context(), dsn, &Options{MaxConns: 1, RetryWindow: 20 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Migrate(t.Context())
	require.NoError(t, err)
	s := NewLedgerStore(db)
	ctx := t.Context()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	run, _, err := s.OpenRun(ctx, ledger.OpenRunParams{Job: "j", Nominal: t0, Fence: 1, Now: t0})
	require.NoError(t, err)
	claim := func(asset string, now time.Time) (ledger.Item, error) {
		return s.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: asset}, Owner: "w1",
			LeaseUntil: now.Add(time.Minute), Fence: 1, MaxAttempts: 3, Now: now})
	}
	complete := func(asset string, now time.Time) (ledger.Item, error) {
		return s.Complete(ctx, ledger.CompleteParams{Key: ledger.ItemKey{Run: run.ID, Asset: asset}, Owner: "w1", Attempt: 1,
			Result: []byte("r"), Now: now})
	}
	// Warm the one connection's statement cache, so that the armed
	// statement is sent and run in one exchange.
	_, err = claim("warm", t0)
	require.NoError(t, err)
	_, err = complete("warm", t0)
	require.NoError(t, err)

	cut.armed.Store(true)
	it, err := claim("a", t0.Add(time.Second))
	require.NoError(t, err, "a claim re-run after its answer was lost")
	require.EqualValues(t, 1, cut.cuts.Load(), "the claim's answer was not cut")
	require.Equal(t, ledger.ItemRunning, it.State)
	require.Equal(t, "w1", it.Owner)
	require.Equal(t, 1, it.Attempt, "the re-run took a second attempt")

	cut.armed.Store(true)
	it, err = complete("a", t0.Add(2*time.Second))
	require.NoError(t, err, "a completion re-run after its answer was lost")
	require.EqualValues(t, 2, cut.cuts.Load())
	require.Equal(t, ledger.ItemSucceeded, it.State)

	// Another owner's claim is still refused as held, even after a lost
	// answer: the re-run's acceptance is for its own write only.
	_, err = claim("b", t0.Add(3*time.Second))
	require.NoError(t, err)
	cut.armed.Store(true)
	_, err = s.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: "b"}, Owner: "w2",
		LeaseUntil: t0.Add(time.Hour), Fence: 1, MaxAttempts: 3, Now: t0.Add(4 * time.Second)})
	require.ErrorIs(t, err, ledger.ErrHeld)

	// A lost answer on a read is read again.
	cut.armed.Store(true)
	got, err := s.GetItem(ctx, ledger.ItemKey{Run: run.ID, Asset: "a"})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, got.State)
}

// With no retry window, the first lost connection is the operation's
// error, ErrUnavailable.
func TestNoRetryWindow(t *testing.T) {
	t.Parallel()
	cut, dsn := newCutter(t, pgtest.DSN(t))
	db, err := Open(t.Context(), dsn, &Options{MaxConns: 1, RetryWindow: -1})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	cut.armed.Store(true)
	_, err = db.Version(t.Context())
	require.ErrorIs(t, err, ErrUnavailable)
	require.True(t, errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET), "%v", err)
}
