package bench

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/queue"
)

// Env is one fresh instance of a backend: empty stores and queues, the
// counter of their calls, and the raw operations the references use, on
// the same server.
type Env struct {
	// Backend holds the stores and queues under test; every call they
	// make is counted by Calls.
	Backend backend.Backend
	Calls   Counter
	// Plain holds the same stores, uncounted, to prepare state.
	Plain backend.Backend
	// RawWriteFunc makes one raw conditional write that creates the record
	// named key (which must be new): the least a conditional write costs
	// on this server.
	RawWriteFunc func(ctx context.Context, key string) error
	// RawSendFunc sends 1..queue.MaxBatch messages in one call to a queue of
	// the same endpoint as Backend.Work (another queue): the least a batch
	// send costs.
	RawSendFunc func(ctx context.Context, msgs []queue.Message) error
	// Info describes the backend's set-up for the report.
	Info string
	// DSN, Pool and RoundTrips are set on PostgreSQL: the database, the
	// pool the stores use and the count of its round trips (scenario 7
	// runs River on the same database and counts its round trips alike).
	DSN        string
	Pool       *pgxpool.Pool
	RoundTrips *RoundTrips
	// CloseFunc releases the Env's resources (Close calls it).
	CloseFunc func() error
}

// Close releases the Env's resources; nil CloseFunc: nothing to release.
func (e *Env) Close() error {
	if e.CloseFunc == nil {
		return nil
	}
	return e.CloseFunc()
}

// Target opens Envs on one backend.
type Target struct {
	Name string
	// OpenFunc returns a fresh Env; name is unique per call and usable in
	// table, queue and file names.
	OpenFunc func(ctx context.Context, name string) (*Env, error)
	// CallsOnly limits the target to the call counts (scenario 1).
	CallsOnly bool
	// River adds scenario 7, the comparison with River (PostgreSQL only).
	River bool

	// dir is the directory of an embedded target's files; aws the
	// endpoints of an AWS target (for the scale scenario, which puts the
	// throttling proxy in front of DynamoDB).
	dir string
	aws *awsEndpoints
}
