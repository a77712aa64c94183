package chaos_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/chaos"
	"github.com/batonhq/baton/internal/pgtest"
)

// The PostgreSQL engine under chaos: a fresh database of the test binary's
// server per run, set up as 'baton setup --backend postgres' does; every
// consumer process connects to it on its own.
func init() {
	harnesses = append(harnesses, chaos.Harness{
		Name: "postgres",
		Setup: func(t testing.TB) chaos.Spec {
			dsn := pgtest.DSN(t)
			_, err := postgresbackend.Setup(t.Context(), dsn, 5)
			require.NoError(t, err)
			return chaos.Spec{"dsn": dsn}
		},
		Open: func(ctx context.Context, s chaos.Spec) (backend.Backend, error) {
			return postgresbackend.Open(ctx, postgresbackend.Params{DSN: s["dsn"], MaxConns: 8})
		},
		Processes: true,
	})
}
