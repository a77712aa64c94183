package httpapp_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/pgtest"
)

// The end-to-end tests also run on the PostgreSQL engine: each on a fresh
// database of the test binary's server, set up as 'baton setup --backend
// postgres' sets it up.
func init() {
	engines = append(engines, struct {
		name string
		open func(t *testing.T) backend.Backend
	}{"postgres", func(t *testing.T) backend.Backend {
		dsn := pgtest.DSN(t)
		_, err := postgresbackend.Setup(t.Context(), dsn, 0)
		require.NoError(t, err)
		b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}})
}

// TestMain stops the PostgreSQL server the postgres engine's tests started.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}
