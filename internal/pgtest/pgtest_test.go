package pgtest_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// Each DSN is its own database on one server: a table made in one is
// absent from the other.
func TestDSNIsolated(t *testing.T) {
	t.Parallel()
	a, b := pgtest.DSN(t), pgtest.DSN(t)
	require.NotEqual(t, a, b)
	ca, err := pgx.Connect(t.Context(), a)
	require.NoError(t, err)
	defer ca.Close(t.Context())
	cb, err := pgx.Connect(t.Context(), b)
	require.NoError(t, err)
	defer cb.Close(t.Context())

	_, err = ca.Exec(t.Context(), `CREATE TABLE only_here (x int)`)
	require.NoError(t, err)
	var n int
	require.NoError(t, cb.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'`).Scan(&n))
	require.Zero(t, n, "a table of one test database is visible in another")
	require.NoError(t, ca.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'`).Scan(&n))
	require.Equal(t, 1, n)
}

// The server is not run as root (PostgreSQL refuses it) and answers
// on loopback.
func TestServerAnswers(t *testing.T) {
	t.Parallel()
	c, err := pgx.Connect(t.Context(), pgtest.ServerDSN(t))
	require.NoError(t, err)
	defer c.Close(t.Context())
	var v string
	require.NoError(t, c.QueryRow(t.Context(), `SHOW server_version`).Scan(&v))
	require.NotEmpty(t, v)
}

func TestBinDir(t *testing.T) {
	t.Parallel()
	dir, err := pgtest.BinDir()
	if err != nil {
		require.Equal(t, pgtest.InstallHint, err.Error())
		return
	}
	_, err = os.Stat(dir + "/initdb")
	require.NoError(t, err)
}

// A server of a test's own survives an immediate stop: its committed
// rows are there after the restart, on the same port, and a connection
// made before the crash is cut.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	s := pgtest.NewServer(t)
	dsn := s.DSN(t)
	c, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer c.Close(t.Context())
	_, err = c.Exec(t.Context(), `CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)`)
	require.NoError(t, err)

	s.Crash(t)
	_, err = pgx.Connect(t.Context(), dsn)
	require.Error(t, err, "the server answers after an immediate stop")
	s.Start(t)

	_, err = c.Exec(t.Context(), `SELECT 1`)
	require.Error(t, err, "a session of before the crash still works")
	c2, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer c2.Close(t.Context())
	var n int
	require.NoError(t, c2.QueryRow(t.Context(), `SELECT count(*) FROM kept`).Scan(&n))
	require.Equal(t, 1, n)
}
