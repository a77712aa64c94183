package sqlitebackend

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlite"
)

// The embedded engine registers as "sqlite", and as the URL scheme sqlite:
// sqlite:///abs/path.db, sqlite:relative/path.db (or sqlite://relative/path.db).
func init() {
	backend.Register(backend.Driver{
		Name:    "sqlite",
		Schemes: []string{"sqlite"},
		Open:    openConfig,
		FromURL: func(u *url.URL, _ string, c *backend.Config) error {
			path := u.Opaque
			if path == "" {
				path = u.Host + u.Path
			}
			if path == "" {
				return errors.New("no file: want sqlite:///path/to.db or sqlite:path/to.db")
			}
			if u.Query().Get("mode") == "ro" {
				c.ReadOnly = true
			}
			c.Store = path
			return nil
		},
		OpenLocks: func(ctx context.Context, c backend.Config) (lease.Store, func() error, error) {
			db, err := sqlite.Open(ctx, store(c), &sqlite.Options{TracerProvider: c.TracerProvider})
			if err != nil {
				return nil, nil, err
			}
			return sqlite.NewLockStore(db), db.Close, nil
		},
		Where: store,
	})
}

func store(c backend.Config) string {
	if c.Store == "" {
		return backend.DefaultStore
	}
	return c.Store
}

func openConfig(ctx context.Context, c backend.Config) (backend.Backend, error) {
	if !c.ReadOnly {
		return OpenWith(ctx, store(c), &Options{TracerProvider: c.TracerProvider})
	}
	b, err := OpenReadOnly(ctx, store(c))
	if errors.Is(err, sqlite.ErrNoStore) {
		return b, fmt.Errorf("%w: %w", backend.ErrNoStore, err)
	}
	return b, err
}
