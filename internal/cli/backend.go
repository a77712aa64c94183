package cli

import (
	"context"
	"flag"

	"github.com/batonhq/baton/internal/engine"
)

// backendFlags select the store every command works on.
type backendFlags struct {
	backend string
	store   string
	job     string
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.backend, "backend", "sqlite", "where state and queues live: sqlite (embedded file) or aws (DynamoDB + SQS from the SDK's standard config)")
	fs.StringVar(&b.store, "store", "var/baton.db", "the embedded store's SQLite file (--backend sqlite)")
	fs.StringVar(&b.job, "job", "fx", "the job to work on")
}

func (b *backendFlags) where() string {
	if b.backend == "sqlite" {
		return b.store
	}
	return b.backend
}

func (b *backendFlags) open(ctx context.Context) (engine.Backend, error) {
	switch b.backend {
	case "sqlite":
		return engine.OpenSQLite(ctx, b.store)
	default:
		return engine.Backend{}, usagef("--backend: unknown backend %q (want sqlite or aws)", b.backend)
	}
}
