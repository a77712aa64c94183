package batonhttp_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/batonhttp"
	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// The PostgreSQL engine by name: refused until set up, with what to run;
// opened with Setup (twice: it is idempotent), and from the variable.
func TestOpenBackendPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, err := batonhttp.OpenBackend(context.Background(), "postgres", &batonhttp.BackendOptions{DSN: dsn})
	require.ErrorContains(t, err, "baton setup --backend postgres")
	for range 2 {
		b, err := batonhttp.OpenBackend(context.Background(), "postgres", &batonhttp.BackendOptions{DSN: dsn, Setup: true})
		require.NoError(t, err)
		require.Equal(t, "postgres", b.Name())
		require.NoError(t, b.Close())
	}
	t.Setenv("BATON_PG_DSN", dsn)
	b, err := batonhttp.OpenBackend(context.Background(), "postgres", nil)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	t.Setenv("BATON_PG_DSN", "")
	_, err = batonhttp.OpenBackend(context.Background(), "postgres", nil)
	require.ErrorContains(t, err, "no connection string")
}
