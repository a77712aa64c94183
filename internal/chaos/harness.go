package chaos

import (
	"context"
	"testing"

	"github.com/batonhq/baton/internal/backend"
)

// Spec is what a process needs to open a harness's backend on the
// resources Setup made: names, paths, endpoints. It crosses process
// boundaries as JSON.
type Spec map[string]string

// Harness is one engine under chaos.
type Harness struct {
	// Name names the engine in reports and subtests.
	Name string
	// Setup makes fresh resources for one run (a store file, a table and
	// queues) and returns their Spec.
	Setup func(t testing.TB) Spec
	// Open opens a backend on spec. Each consumer and the coordinators
	// open their own, as separate processes would; consumer processes call
	// it too, so it must depend on spec alone.
	Open func(ctx context.Context, spec Spec) (backend.Backend, error)
	// Processes lets consumers run as operating-system processes that the
	// run SIGKILLs (Config.Processes).
	Processes bool
}
