package postgresbackend

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/postgres"
)

// The PostgreSQL engine registers as "postgres", and as the URL schemes
// postgres: and postgresql: (the connection string itself).
func init() {
	backend.Register(backend.Driver{
		Name:    "postgres",
		Schemes: []string{"postgres", "postgresql"},
		Open: func(ctx context.Context, c backend.Config) (backend.Backend, error) {
			dsn := dsnOf(c)
			if c.Setup {
				if _, err := Setup(ctx, dsn, 0); err != nil {
					return backend.Backend{}, err
				}
			}
			return Open(ctx, Params{DSN: dsn, RetryWindow: c.RetryWindow, ReceiveWait: c.ReceiveWait, TracerProvider: c.TracerProvider})
		},
		FromURL: func(_ *url.URL, raw string, c *backend.Config) error {
			c.DSN = raw
			return nil
		},
		OpenLocks: func(ctx context.Context, c backend.Config) (lease.Store, func() error, error) {
			dsn := dsnOf(c)
			if strings.TrimSpace(dsn) == "" {
				return nil, nil, &backend.ConfigError{Err: fmt.Errorf("postgres: no connection string (%s)", EnvDSN)}
			}
			db, err := postgres.Open(ctx, dsn, nil)
			if err != nil {
				return nil, nil, err
			}
			if err := db.CheckSchema(ctx); err != nil {
				db.Close()
				return nil, nil, fmt.Errorf("postgres %s: %w", Redact(dsn), err)
			}
			return postgres.NewLockStore(db), db.Close, nil
		},
		Setup: func(ctx context.Context, c backend.Config, s backend.SetupConfig) (backend.SetupResult, error) {
			dsn := dsnOf(c)
			res, err := Setup(ctx, dsn, s.MaxReceives)
			if err != nil {
				return backend.SetupResult{}, err
			}
			applied := "none (already current)"
			if len(res.Applied) > 0 {
				applied = strings.Trim(fmt.Sprint(res.Applied), "[]")
			}
			return backend.SetupResult{
				Summary: fmt.Sprintf("database %s: schema version %d (migrations applied: %s); work queue %s, to %s after %d receives",
					Redact(dsn), res.Version, applied, WorkQueue, DeadLetterQueue, res.MaxReceives),
				Fields: map[string]any{"database": Redact(dsn), "schema_version": res.Version, "migrations_applied": res.Applied, "max_receives": res.MaxReceives},
			}, nil
		},
		SetupDefaults: backend.SetupConfig{MaxReceives: MaxReceives},
		Defaults:      backend.Config{RetryWindow: DefaultRetryWindow, ReceiveWait: DefaultReceiveWait},
		Where: func(c backend.Config) string {
			if dsnOf(c) == "" {
				return "postgres"
			}
			return "database " + Redact(dsnOf(c))
		},
	})
}

// dsnOf is c's connection string, else $BATON_PG_DSN.
func dsnOf(c backend.Config) string {
	if c.DSN != "" {
		return c.DSN
	}
	return os.Getenv(EnvDSN)
}
