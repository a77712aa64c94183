package batonlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/lease/leasetest"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/postgres"
	"github.com/batonhq/baton/internal/sqlite"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localaws.Stop()
	pgtest.Stop()
	os.Exit(code)
}

var tables atomic.Int64

// engine makes lock stores of one engine for tests.
type engine struct {
	name     string
	newStore func(t *testing.T) lease.Store
	// caps are what the engine's contention record keeps.
	caps leasetest.Capabilities
}

// engines are the three engines: a fresh SQLite file, a fresh PostgreSQL
// database and a fresh DynamoDB table (on the emulator), each shared by
// the cases of one test.
func engines() []engine {
	return []engine{
		{"sqlite", func(t *testing.T) lease.Store {
			db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return sqlite.NewLockStore(db)
		}, leasetest.Capabilities{LatestRefusalByClock: true}},
		{"postgres", func(t *testing.T) lease.Store {
			db, err := postgres.Open(t.Context(), pgtest.DSN(t), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			_, err = db.Migrate(t.Context())
			require.NoError(t, err)
			return postgres.NewLockStore(db)
		}, leasetest.Capabilities{LatestRefusalByClock: true}},
		{"aws", func(t *testing.T) lease.Store {
			c := localaws.DynamoDBClient(t)
			table := fmt.Sprintf("batonlock-%d-%d", os.Getpid(), tables.Add(1))
			require.NoError(t, awsdynamodb.CreateTable(context.Background(), c, table))
			return awsdynamodb.NewLockStore(c, table, nil)
		}, leasetest.Capabilities{}},
	}
}

// viaLocker is lease.Store through the public API: every call goes
// through a Locker with the call's TTL, skew and clock, and the Lock it
// returns (TryAcquire's path with the suite's owner; Lock.Renew,
// Lock.Release, Locker.Inspect). Errors come back as the lease port's.
// Refusals are not recorded by Acquire (the suite counts them itself
// through the store's ContentionCounter, which viaLocker forwards).
type viaLocker struct {
	raw lease.Store
}

func (v viaLocker) locker(ttl, skew time.Duration, now time.Time) (*Locker, error) {
	l, err := newLocker(uncounted{v.raw}, &Options{TTL: ttl, Skew: skew, NowFunc: func() time.Time { return now }, Heartbeat: -1})
	if err != nil {
		return nil, err
	}
	l.nowatch = true
	return l, nil
}

// uncounted hides the store's ContentionCounter from the Locker.
type uncounted struct{ lease.Store }

func (v viaLocker) lock(l *Locker, job, owner string, fence int64, acquired time.Time) *Lock {
	k := &Lock{l: l, key: job, owner: owner, fence: fence, acquired: acquired, renewed: make(chan struct{}, 1), stop: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancelCause(context.Background())
	return k
}

func (v viaLocker) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	l, err := v.locker(p.TTL, p.Skew, p.Now)
	if err != nil {
		return lease.Lease{}, err
	}
	k, err := l.tryAcquire(ctx, p.Job, p.Owner, p.Now)
	var held *HeldError
	if errors.As(err, &held) {
		return lease.Lease{}, &lease.HeldError{Holder: leaseOf(held.Holder)}
	}
	if err != nil {
		return lease.Lease{}, err
	}
	return lease.Lease{Job: k.Key(), Owner: k.Owner(), Fence: k.Fence(), ExpiresAt: k.ExpiresAt(), AcquiredAt: k.AcquiredAt()}, nil
}

func (v viaLocker) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	if err := CheckKey(p.Job); err != nil {
		return lease.Lease{}, err
	}
	l, err := v.locker(p.TTL, 0, p.Now)
	if err != nil {
		return lease.Lease{}, err
	}
	k := v.lock(l, p.Job, p.Owner, p.Fence, time.Time{})
	if err := k.Renew(ctx); err != nil {
		if errors.Is(err, ErrLost) {
			return lease.Lease{}, fmt.Errorf("%w: %w", lease.ErrNotHolder, err)
		}
		return lease.Lease{}, err
	}
	return lease.Lease{Job: k.Key(), Owner: k.Owner(), Fence: k.Fence(), ExpiresAt: k.ExpiresAt(), AcquiredAt: k.AcquiredAt()}, nil
}

func (v viaLocker) Release(ctx context.Context, p lease.ReleaseParams) error {
	if err := CheckKey(p.Job); err != nil {
		return err
	}
	l, err := v.locker(time.Minute, 0, time.Now())
	if err != nil {
		return err
	}
	err = v.lock(l, p.Job, p.Owner, p.Fence, time.Time{}).Release(ctx)
	if errors.Is(err, ErrNotOwner) {
		return fmt.Errorf("%w: %w", lease.ErrNotHolder, err)
	}
	return err
}

func (v viaLocker) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	l, err := v.locker(time.Minute, 0, time.Now())
	if err != nil {
		return lease.Lease{}, err
	}
	info, err := l.Inspect(ctx, job)
	if errors.Is(err, ErrNotFound) {
		return lease.Lease{}, fmt.Errorf("%w: %w", lease.ErrNotFound, err)
	}
	if err != nil {
		return lease.Lease{}, err
	}
	return leaseOf(info), nil
}

func leaseOf(i Info) lease.Lease {
	return lease.Lease{Job: i.Key, Owner: i.Owner, Fence: i.Fence, ExpiresAt: i.ExpiresAt, AcquiredAt: i.AcquiredAt}
}

// counted is viaLocker with the store's ContentionCounter.
type counted struct {
	viaLocker
	lease.ContentionCounter
}

// The lease conformance suite (porcupine linearizability included) runs
// through the public API on every engine.
func TestLeaseSuiteThroughLocker(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			raw := e.newStore(t)
			store := counted{viaLocker{raw}, raw.(lease.ContentionCounter)}
			leasetest.Run(t, leasetest.Harness{
				NewStore:     func(*testing.T) lease.Store { return store },
				Capabilities: e.caps,
			})
		})
	}
}
