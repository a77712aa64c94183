package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// What ReleaseLease did (LeaseRelease.Outcome).
const (
	// LeaseAlreadyFree: the lease had no holder; nothing was written.
	LeaseAlreadyFree = "already_free"
	// LeaseReleasedExpired: the expired lease was taken over with one
	// conditional write (fence F+1, so late writes of the dead holder are
	// refused), then released.
	LeaseReleasedExpired = "released_expired"
	// LeaseChangedHands: the lease expired and changed hands after the
	// caller looked (the holder named no longer held it); it was taken
	// over and released all the same: it is free.
	LeaseChangedHands = "changed_hands"
	// LeaseReleasedLive: ForceLive released a live lease as it was (its
	// fence stays; the next acquisition gets the next one).
	LeaseReleasedLive = "released_live"
)

// Errors of ReleaseLease.
var (
	// ErrNoLease: the job has no lease record (its coordinator never ran).
	ErrNoLease = errors.New("no lease record")
	// ErrLeaseChanged: the lease is not held by the owner and fence named:
	// it changed hands since the caller looked. The error is a
	// *LeaseChangedError.
	ErrLeaseChanged = errors.New("lease changed hands")
	// ErrLeaseLive: the lease is live (its holder may be slow, not dead)
	// and ForceLive was not set. The error is a *LeaseLiveError.
	ErrLeaseLive = errors.New("lease is live")
)

// LeaseChangedError reports a lease held by another owner or fence than
// the ones named.
type LeaseChangedError struct {
	Job     string
	Owner   string // named by the caller
	Fence   int64  // named by the caller
	Current lease.Lease
}

func (e *LeaseChangedError) Error() string {
	return fmt.Sprintf("the lease of %s is held by %q with fence %d, not %q with fence %d; it changed hands since you looked",
		e.Job, e.Current.Owner, e.Current.Fence, e.Owner, e.Fence)
}

// Is makes errors.Is(err, ErrLeaseChanged) true.
func (e *LeaseChangedError) Is(target error) bool { return target == ErrLeaseChanged }

// LeaseLiveError reports a live lease that a release without ForceLive
// refused.
type LeaseLiveError struct {
	Job   string
	Lease lease.Lease
	Skew  time.Duration // the job's clock-skew allowance
	Now   time.Time     // when it was found live
}

func (e *LeaseLiveError) Error() string {
	return fmt.Sprintf("%q holds the lease of %s until %s (clock-skew allowance %s) and may be alive; an expired lease is taken over at once by the next trigger, so waiting is safe",
		e.Lease.Owner, e.Job, e.Lease.ExpiresAt.UTC().Format(time.RFC3339), e.Skew)
}

// Is makes errors.Is(err, ErrLeaseLive) true.
func (e *LeaseLiveError) Is(target error) bool { return target == ErrLeaseLive }

// raceError reports a live lease that changed hands between the check
// and the release. It matches ErrLeaseChanged and the store's error.
type raceError struct{ err error }

func (e raceError) Error() string {
	return fmt.Sprintf("the lease changed hands during the release (%v); nothing released", e.err)
}

func (e raceError) Unwrap() error        { return e.err }
func (e raceError) Is(target error) bool { return target == ErrLeaseChanged }

// ReleaseParams are the inputs of ReleaseLease.
type ReleaseParams struct {
	Job string
	// Owner and Fence are the holder to release, as the caller saw them
	// (lease.Store.Inspect; 'baton lease show'): both must match the
	// record, or nothing happens.
	Owner string
	Fence int64
	// ForceLive releases a live lease too. Its owner may be slow, not
	// dead: releasing it lets a second coordinator run beside it.
	ForceLive bool
	// ConfirmFunc, optional, is called with the live lease before
	// ForceLive releases it; an error from it refuses the release and is
	// returned as it is.
	ConfirmFunc func(lease.Lease) error
}

// LeaseRelease says what ReleaseLease did.
type LeaseRelease struct {
	Outcome string
	// Lease is the record as ReleaseLease found it.
	Lease lease.Lease
	// TakeoverFence is, for LeaseReleasedExpired and LeaseChangedHands,
	// the fence of the takeover that was released.
	TakeoverFence int64
	Skew          time.Duration // the job's clock-skew allowance
	Now           time.Time     // when it looked
}

// ReleaseLease releases job p.Job's coordinator lease held by p.Owner
// with p.Fence, with the guards of 'baton lease release':
//
//   - no record: ErrNoLease; no holder: LeaseAlreadyFree, nothing written;
//   - another owner or fence: *LeaseChangedError, nothing written;
//   - expired (clock-skew allowance included): taken over by one
//     conditional write (refused with a *lease.HeldError if the holder
//     renewed in between), then released: the fence moves on, so late
//     writes of the old holder are refused, and the lease is free;
//   - live: *LeaseLiveError unless p.ForceLive; with it (and
//     p.ConfirmFunc's consent) released as it is, failing with an error
//     matching ErrLeaseChanged and lease.ErrNotHolder if it changed hands
//     meanwhile.
//
// The record is never deleted: the fence counter stays.
func (o *Operator) ReleaseLease(ctx context.Context, p ReleaseParams) (LeaseRelease, error) {
	var res LeaseRelease
	switch {
	case p.Owner == "":
		return res, errors.New("release lease: the owner is required")
	case p.Fence < 1:
		return res, fmt.Errorf("release lease: the fence must be positive, got %d", p.Fence)
	}
	j, err := o.job(p.Job)
	if err != nil {
		return res, err
	}
	res.Skew, res.Now = j.Limits.ClockSkew, o.now()
	l, err := o.b.Leases.Inspect(ctx, j.Name)
	if errors.Is(err, lease.ErrNotFound) {
		return res, fmt.Errorf("job %s has %w (its coordinator never ran)", j.Name, ErrNoLease)
	}
	if err != nil {
		return res, err
	}
	res.Lease = l
	if l.Owner == "" {
		res.Outcome = LeaseAlreadyFree
		return res, nil
	}
	if l.Owner != p.Owner || l.Fence != p.Fence {
		return res, &LeaseChangedError{Job: j.Name, Owner: p.Owner, Fence: p.Fence, Current: l}
	}
	if l.Held(res.Now, res.Skew) {
		if !p.ForceLive {
			return res, &LeaseLiveError{Job: j.Name, Lease: l, Skew: res.Skew, Now: res.Now}
		}
		if p.ConfirmFunc != nil {
			if err := p.ConfirmFunc(l); err != nil {
				return res, err
			}
		}
		if err := o.b.Leases.Release(ctx, lease.ReleaseParams{Job: j.Name, Owner: l.Owner, Fence: l.Fence}); err != nil {
			if errors.Is(err, lease.ErrNotHolder) {
				return res, raceError{err}
			}
			return res, err
		}
		res.Outcome = LeaseReleasedLive
		return res, nil
	}

	// Expired: take it over (one conditional write, refused if the holder
	// renewed meanwhile), then release the takeover.
	op := "operator:" + o.o.Owner
	got, err := o.b.Leases.Acquire(ctx, lease.AcquireParams{Job: j.Name, Owner: op, TTL: 30 * time.Second, Now: o.now(), Skew: res.Skew})
	var held *lease.HeldError
	if errors.As(err, &held) {
		return res, fmt.Errorf("the lease of %s is live again: %w; nothing released", j.Name, err)
	}
	if err != nil {
		return res, fmt.Errorf("take over the expired lease: %w", err)
	}
	if err := o.b.Leases.Release(ctx, lease.ReleaseParams{Job: j.Name, Owner: op, Fence: got.Fence}); err != nil {
		return res, fmt.Errorf("took over the expired lease as %q (fence %d) but could not release it (it expires at %s): %w",
			op, got.Fence, got.ExpiresAt.UTC().Format(time.RFC3339), err)
	}
	res.TakeoverFence = got.Fence
	res.Outcome = LeaseReleasedExpired
	if got.Fence != l.Fence+1 {
		res.Outcome = LeaseChangedHands
	}
	return res, nil
}
