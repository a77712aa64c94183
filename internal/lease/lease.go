// Package lease is the port for per-job mutual exclusion of coordinators.
//
// A lease record exists per job. It is free (never taken, or released),
// held (an owner and an absolute expiry), or expired (held, but its expiry
// plus the caller's skew allowance is at or before the caller's clock).
// Every successful acquisition mints a fence: a per-job counter that
// strictly increases across acquisitions and releases, so that writes made
// under a lease can be conditioned on it.
//
// A store may also count the acquisitions it refused, for operators: the
// optional ability ContentionCounter, found by type assertion; Counting
// records the refusals of its Acquire through it.
//
// Implementations live in adapter packages (internal/sqlite,
// internal/awsdynamodb) and must pass the conformance suite in
// internal/lease/leasetest, the contention cases included when they have
// the ability.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Adapters translate backend errors into these; callers
// test with errors.Is.
var (
	// ErrHeld is returned by Acquire when another owner holds a live lease.
	// The error is always a *HeldError carrying the live record.
	ErrHeld = errors.New("lease held by another owner")

	// ErrNotHolder is returned by Renew and Release when the caller's owner
	// and fence are not those of the current record (another acquisition
	// happened, the lease was released, or, for Renew, it expired).
	ErrNotHolder = errors.New("not the current lease holder")

	// ErrNotFound is returned by Inspect when the job has no lease record.
	ErrNotFound = errors.New("no lease record")
)

// Lease is the record of one job's lease.
type Lease struct {
	Job        string
	Owner      string    // empty when free
	Fence      int64     // the fence of the latest acquisition (0: never acquired)
	ExpiresAt  time.Time // zero when free
	AcquiredAt time.Time // time of the latest acquisition, by the acquirer's clock
}

// Held reports whether the lease has a live holder at now, given the skew
// allowance: held until ExpiresAt+skew.
func (l Lease) Held(now time.Time, skew time.Duration) bool {
	return l.Owner != "" && now.Before(l.ExpiresAt.Add(skew))
}

// HeldError is the error Acquire returns on contention. It matches ErrHeld.
type HeldError struct {
	Holder Lease
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %q held by %q until %s (fence %d)",
		e.Holder.Job, e.Holder.Owner, e.Holder.ExpiresAt.UTC().Format(time.RFC3339Nano), e.Holder.Fence)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// AcquireParams are the inputs of Store.Acquire.
type AcquireParams struct {
	Job   string
	Owner string        // must be non-empty
	TTL   time.Duration // must be positive; ExpiresAt = Now + TTL
	Now   time.Time     // the caller's clock
	// Skew is the clock-skew allowance: a lease whose ExpiresAt+Skew is
	// after Now is live. Zero means no allowance.
	Skew time.Duration
}

// RenewParams are the inputs of Store.Renew.
type RenewParams struct {
	Job   string
	Owner string // must be non-empty
	Fence int64
	TTL   time.Duration // must be positive; new ExpiresAt = Now + TTL
	Now   time.Time
}

// ReleaseParams are the inputs of Store.Release.
type ReleaseParams struct {
	Job   string
	Owner string // must be non-empty
	Fence int64
}

// Store holds lease records. All methods may be called concurrently, from
// several processes. Invalid parameters (an empty Job or Owner, a
// non-positive TTL) make a method return an error matching none of the
// sentinels above, without writing anything; no method panics on them.
type Store interface {
	// Acquire takes the job's lease for Owner in one conditional write.
	// It succeeds when the lease is free, absent, or expired at Now (the
	// holder's ExpiresAt+Skew is at or before Now): an expired lease is taken
	// over at once. It also succeeds when Owner already holds a live lease
	// (re-entrant acquisition mints a new fence). The returned record has
	// Owner, ExpiresAt = Now+TTL, AcquiredAt = Now and a fence strictly
	// greater than any fence minted before for the job, releases included.
	// On a live lease held by another owner it returns a *HeldError
	// (matching ErrHeld) with the holder's record, in one round trip where
	// the backend returns the old record on a failed condition.
	Acquire(ctx context.Context, p AcquireParams) (Lease, error)

	// Renew extends a live lease held by Owner with Fence to Now+TTL and
	// returns the new record. It returns ErrNotHolder when the record's
	// owner or fence differ, or when the lease expired at Now (no skew
	// allowance: a holder must renew before its own expiry).
	Renew(ctx context.Context, p RenewParams) (Lease, error)

	// Release frees the lease held by Owner with Fence; the fence counter is
	// kept. It returns ErrNotHolder when owner or fence differ (including a
	// lease already released). Releasing an expired lease that nobody took
	// over succeeds.
	Release(ctx context.Context, p ReleaseParams) error

	// Inspect returns the job's lease record, or ErrNotFound.
	Inspect(ctx context.Context, job string) (Lease, error)
}
